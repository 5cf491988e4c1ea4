"""How the user does a kind of work, and with what: "The user plans everything in Notion", "The user does the user's
bookkeeping in FreeAgent", "The user keeps all the user's refs in Zotero".

The writers label every such habit as lasting (24 memories of this shape on the outside and in-style sets, all
but the bundled ones matched), yet the learned decision scores some low when nothing else in the clause is a cue
it was trained on ("I plan everything in Notion" 0.34, "I edit everything in vim" 0.51). A memory of this shape is
kept at the names' confidence, as a duty is (`duties`); the decision still decides whether the clause is a fact.
"""

import re

_WORK = (
    r"plans|edits|keeps|writes|tracks|does|runs|manages|stores|logs|budgets|journals|organi[sz]es|schedules|codes|"
    r"draws|designs|records|syncs|drafts|builds|hosts|deploys|backs\s+up"
)
# The work: everything, or a kind of the user's own ("all the user's analysis", "the user's books").
_WHAT = r"(?:everything|it\s+all|all\s+(?:of\s+)?the\s+user's\s+[\w-]+(?:\s+[\w-]+)?|the\s+user's\s+[\w-]+(?:\s+[\w-]+)?)"
_TOOL_HABIT = re.compile(
    rf"^(?:on [\d-]+, )?the user(?:'s team)? (?:always |still |now |just )?(?:{_WORK}) {_WHAT} "
    # "with" a tool, not with company ("does everything with the kids").
    r"(?:in|on|through|via|using|with(?! (?:the|a|an|my|our|his|her|their)\b)) (?!(?:it|that|this|them|those|there)\b)\S",
    re.IGNORECASE,
)


def states_a_tool_habit(memory: str) -> bool:
    """Whether a memory says how the user does a kind of work and with what ("The user plans everything in
    Notion")."""
    return _TOOL_HABIT.match(memory) is not None

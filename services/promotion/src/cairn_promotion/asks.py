"""What the user asked for in this session is a task, not a fact about them.

These run on a memory as it would be written (after `rewrite.self_contained`), after the decision kept its
clause: "The user wants to add a rolling 24-hour rainfall total", "The user needs help planning next week's
meals", "Draft a quick email to the plumber", "The user wants the assistant to remind the user to cancel the
trial before the 28th", and an errand of the coming days ("The user shall telephone the pharmacist in the
morning"). No labelled set has such a memory as a fact; what is durable in them is said with a
habit or a standing rule ("always", "every morning", "from now on"), which keeps the memory.
"""

import re

from cairn_promotion.lexicon import WEEKDAY
from cairn_promotion.rewrite import with_date

# A standing rule or a habit, not a one-off task: "remind me to take levothyroxine at 6:30 every morning".
_STANDING = re.compile(
    r"\b(?:always|never|every|each|daily|weekly|monthly|from now on|going forward|in (?:the )?future|"
    r"default|whenever|any ?time)\b",
    re.IGNORECASE,
)
# The verbs of a request the assistant carries out once.
_TASK_VERBS = (
    r"summari[sz]e|draft|write|explain|translate|list|show|find|check|calculate|compare|rewrite|fix|make|create|"
    r"generate|suggest|recommend|book|remind|add|push|move|reschedule|cancel|help|give|tell|send|look|plan|put|"
    r"set up|build|review|proofread|convert|print|"
    # A prompt's task: "Describe the role of ...", "Act as expert in laravel", "Imagine you are a top investigator",
    # "Finish with a table of ..." (LongMemEval: 8 survivors; no readable set has one).
    r"describe|share|talk about|act as|imagine|finish with|discuss|elaborate|outline|compose|pretend|analy[sz]e|"
    r"brainstorm|now look"
)
# "The user wants to add ...", "The user is trying to set up conditional formatting": what the user means to do
# in this session. Changing a habit ("is trying to cut coffee to one cup a day") is the habit, and a goal that
# takes months ("wants to train for a half marathon", "wants to retire at 55", "wants to build up a 6-month
# emergency fund", "wants to pay off the car loan") is the user's for that long.
_MEANS_TO = re.compile(
    r"^The user (?:really |just |also |now )?(?:wants|needs|would (?:now )?(?:like|love)|'d (?:like|love)|is looking|"
    # "The user will also make sure to mention that the booth was a success", "... to personalize the follow-up
    # email": the assistant's advice taken up for this session (LongMemEval: 14 survivors; no readable set has one).
    r"is trying|(?:will|is going to) (?:also |definitely )?make sure) to "
    r"(?!be\b|(?:cut|quit|stop|reduce|limit|avoid|lose|eat|drink|sleep|train|learn|retire|become|save|build up|"
    r"pay off|pay down)\b)\w+",
    re.IGNORECASE,
)
# "The user needs help with one problem in the API", "The user needs like a quick idea for a snack", "The user
# needs a script that finds IAM access keys older than 90 days": something to be made in this session.
_NEEDS_HELP = re.compile(
    # "The user is looking for some advice on dog arthritis", "... some recommendations on coffee shops in the
    # area" (LongMemEval: 28 of 1,590 survivors of 400 sessions; no readable set has one).
    r"^The user (?:really |just |also )?(?:needs|wants|would like|is (?:(?:also|actually|currently|just|really) )?"
    r"(?:looking|searching) for)(?: like)? "
    r"(?:(?:some |any |a few |more |a little |a bit of |a quick |quick )?(?:new )?(?:help|ideas?|advice|suggestions?|"
    r"tips|recommendations?|information|info|inspiration|guidance|resources|"
    r"an? (?:quick )?(?:idea|overview|summary|plan|script|way|function|query|formula|regex|template))"
    # "The user wants a strength routine the user can do at home", "... a running plan", "... a GitHub Actions
    # check that blocks merges": a thing to be made, named with what it is for (writers E, K, L and O).
    r"|an? (?:[\w'-]+ ){1,3}?(?:routine|plan|check|schedule|template|checklist|workout|itinerary|procedure))\b",
    re.IGNORECASE,
)
# "Summarize the second one in 3 bullets", "Need quick overview of UPI market share", and the same request
# rewritten: "The user wants the assistant to remind the user to call mom sunday at 11".
_ASKS_ASSISTANT = re.compile(
    rf"^(?:The user wants the assistant to |pls |please |can you |could you )?(?:{_TASK_VERBS})\b(?!:)|^need\b",
    re.IGNORECASE,
)
# "The user wants this regex explained to the user", "The user really needs it stable", "The user needs them
# fast": what the chat points at is this session's; so is "something accessible" the user needs now.
_WANTS_THIS = re.compile(
    r"^The user (?:really |just |also )?(?:wants|needs|would like) "
    r"(?:this|that|these|those|it|them|something|the (?:first|second|third|last) one)\b",
    re.IGNORECASE,
)
# "The user wants a table booked for 2 at Lume friday 8pm", "... 3 venues emailed for quotes", "... 'rotate TLS
# certs' added to the user's ops list": one thing to be done. A standing wish names a kind of thing and how it
# should be ("wants prices shown in CHF", "wants coroutines used over RxJava"), and stays.
_WANTS_ONE_DONE = re.compile(
    r"^The user (?:wants|needs|would like) (?:(?:an?|one|\d+)\b|'[^']+')[^,.]{0,60}?\b"
    r"(?:emailed|written|added|booked|sent|drafted|made|fixed|removed|ordered|printed|cancell?ed|reserved|created)\b",
    re.IGNORECASE,
)
# A memory that stops mid-phrase ("The user's boss wants the user to", "... plus a") lost its end to a dropped
# quote or a split: it states nothing whole. A stranded preposition is English ("a budget the user tries to
# stick to", "if the assistant needs to"), so only a determiner or a subordinating word counts, or a "wants the
# user to" with nothing after it.
_DANGLING_END = re.compile(
    r"(?:\b(?:the|an?|because|if|when|my|our|your|their|than)"
    r"|\b(?:wants|asked|told|needs|expects)\s+(?:the user|me|us|him|her|them)\s+to)\W*$",
    re.IGNORECASE,
)
# "The user's husband Tom has said", "The user's partner Luis has said that before": what was said is in another
# sentence. "... what the physio has said", "as the vet had said" are whole.
_SAID_NOTHING = re.compile(
    r"^(?!.*\b(?:what|as|how|whatever)\b).*\b(?:has|had) (?:said|told|mentioned|asked|suggested)"
    r"(?: (?:that|it|so))?(?: (?:before|already|again|too))?\W*$",
    re.IGNORECASE,
)
# A copula with nothing after it ("VBA in Excel 2016 is", "The user works from home so this is"), unless its
# subject is a pronoun ("where they are", "here we are") or it closes an embedded question ("what the fix is").
_DANGLING_COPULA = re.compile(
    r"(?<!\bit )(?<!\bthat )(?<!\bthere )(?<!\bthey )(?<!\bwe )(?<!\byou )(?<!\bi )(?<!\bhe )(?<!\bshe )"
    r"(?<!\balways )(?<!\bstill )\b(?:is|are|was|were)\W*$",
    re.IGNORECASE,
)
_EMBEDDED_QUESTION_END = re.compile(
    r"\b(?:what|where|how|who|why|which|whatever|wherever)\b(?:\s+\S+){0,6}?\s+(?:is|are|was|were)\W*$",
    re.IGNORECASE,
)

# "The user always prefers that", "The user always says that", "The user only wants one", "The user has never
# trusted them": what the verb takes is named elsewhere in the chat, so the memory alone says nothing.
_OBJECT_ELSEWHERE = re.compile(
    r"\b(?:prefer(?:s|red)?|liked?|likes|loved?|loves|says|hated?|hates|enjoy(?:s|ed)?|needs?|needed|uses?|used|"
    r"does|want(?:s|ed)?|trust(?:s|ed)?)(?: \w+ly)? (?:that|those|this|these|it|them|one|him|her)\W*$"
    # "The user never does", "The user never shall": the verb is elided, and what it stands for is elsewhere.
    r"|^(?:On [\d-]+, )?the user (?:(?:\w+ly|never|always|just|still|also) )*"
    r"(?:shall|will|does|did|do|can|would|should|won't|can't|doesn't|didn't)\W*$",
    re.IGNORECASE,
)

# A fact said in passing inside the task: "The user needs to add the user's latest certification in Data
# Science, which the user completed last month".
_ASIDE = re.compile(r",\s+(?:which|who)\s+the user\s+\w+ed\b", re.IGNORECASE)
# Letter-writing courtesies addressed to the assistant: "The user should be most grateful for any light the
# assistant is able to shed", "The user hopes the assistant will forgive a letter which may wander".
_COURTESY = re.compile(
    r"^The user (?:(?:should|would|will|shall) be (?:\w+ )?(?:grateful|obliged|thankful)"
    # "would be grateful if the assistant kept its instructions to numbered steps" is a preference: kept.
    r"(?= for\b| if the assistant (?:could|would|might|can)\b|\W*$)"
    r"|(?:does |do )?hopes? (?:that )?the assistant|trusts (?:they|the assistant) will)"
    r"|\b(?:forgive|bear with) (?:the user|a|an|this|my)\b"
    # How the writer feels about telling it (writer N): "The user regrets to say", "is delighted to report that
    # ...", "is glad to see", "is sure the assistant can imagine", "is at a loss to understand", "notes it is a
    # Wednesday", "is afraid, ..." (7 survivors, none matched; "is afraid of heights" is a fact and stays).
    # "If you have any more questions or need further guidance, feel free to ask", "If you have any suggestions, let
    # me know": a sign-off (LongMemEval: 9 survivors).
    r"|^(?:On [\d-]+, )?if the assistant has any (?:more |other |further )?(?:suggestions|advice|tips|ideas|questions|"
    r"thoughts|recommendations)\b"
    r"|^the user (?:regrets to|is (?:\w+ )?(?:delighted|pleased|glad|happy|sorry|sad|thrilled|relieved) to "
    r"(?:say|report|see|hear|tell|learn|note|find)\b|is afraid(?=,| that\b|\W*$)|is sure the assistant\b|"
    r"is at a loss\b|notes (?:that|it)\b)",
    re.IGNORECASE,
)
# What was or will be done to a thing named elsewhere: "The user's team cut it from €300", "The user sold it when
# the user moved flats", "Flushing it is always safe", "The user will keep it on 5 GHz permanently", "The user
# shall fill it in over the coming week", "The user has found him on the 1901 census" (15 survivors on the outside
# and in-style writers' sets, none matched). The fact is about the thing or the person, which the memory does not
# name (a "him" or "her" the session named was resolved before).
_DONE_TO_A_PRONOUN = re.compile(
    r"^(?:On [\d-]+, )?(?:the user(?:'s team)? (?:has |had |have )?(?:\w+ly )?"
    # Past tenses done to a thing: a subset of `lexicon.PAST_IRREGULAR` on purpose, since with all of them "The user
    # has heard it's a great all-around mat" (a LongMemEval survivor, "it" opening what was heard) would go too.
    r"(?:\w+ed|set|cut|put|got|made|had|did|took|gave|ran|built|wrote|bought|sold|paid|sent|told|kept|left|lost|"
    r"found|brought|threw|met|saw|promised) "
    # "her" as an object, not a determiner ("met her sister" names the sister).
    r"(?:it|that|them|him|her(?= (?:the|that|a|an|on|in|at|to|for|with|about|from)\b|\W*$))"
    r"|(?!\w*thing\b)\w+ing (?:it|them)"
    r"|the user(?:'s team)? (?:will|shall|would|can|could|should|must|may|might) (?:not )?(?:\w+ly )?\w+ (?:it|them))\b",
    re.IGNORECASE,
)

# "The user always forgets about it", "The user is the only admin on it", "The user's mom's pension covers most
# of it": a memory of one clause that ends on "it" after a preposition names nothing "it" could be (a comma's
# other clause may: "Main is protected, only the release bot can push to it"). "behind it" places something.
# 6 survivors on the outside writers' sets and the in-style dev half, none matched.
_AT_A_PRONOUN = re.compile(
    r"^[^,;]*\b(?:on|in|with|for|to|from|about|at|of|into|onto|by|over|under|without|around|off) it\W*$",
    re.IGNORECASE,
)

# "The user is her primary carer, and": the joining word is cut, the fact stays.
# The user or their team, in a memory `rewrite.self_contained` may have dated ("On 2025-03-11, the user shall ...").
DATED_USER = r"^(?:On [\d-]+, )?the user(?:'s team)? "
# A time of the coming days: "on Wednesday", "in the morning", "in 20 minutes", "at 3pm" ("since Tuesday" is past).
_SOON = (
    rf"(?<!since )(?:on )?{WEEKDAY}\b|tomorrow|tonight|later today|in the morning|"
    r"this (?:week|weekend|evening|afternoon|morning)|next (?:week|appointment|visit)|"
    r"in a (?:fortnight|few days|day or two)|in (?:about )?\d+ (?:minutes|mins|hours)|over the coming (?:week|days)"
)
# "The user shall telephone the pharmacist in the morning", "The user will do the stairs test on Wednesday": an
# errand of the coming days is a task too (a decision says no such day: "will open a Roth IRA").
# "The user has to book something for the anniversary by Friday": an obligation of the coming days likewise, and
# a plan of them ("The user intends to buy seed potatoes on Saturday").
_ERRAND = re.compile(
    rf"{DATED_USER}(?:shall|will|has to|have to|needs to|must|intends to|is going to|plans to)\b.*\b(?:{_SOON})",
    re.IGNORECASE,
)
# "The user has a doctor appointment Thursday", "The user has an important call at 3pm", "The user is heading to
# Kyoto next week", "Flying to Yerevan friday": an appointment or a trip of the coming days.
_APPOINTMENT = re.compile(
    rf"(?:{DATED_USER}(?:has(?: got)? an?|is (?:heading|flying|going|driving|travell?ing))"
    # "Flying to Yerevan friday, need a packing list": the same trip said without its subject.
    r"|^(?:On [\d-]+, )?(?:heading|flying|driving|travell?ing|off) to)\b"
    rf".*\b(?:{_SOON}|at \d{{1,2}}(?::\d\d)?\s*(?:am|pm))",
    re.IGNORECASE,
)
# "What's 350F in celsius, baking later", "What's the capital of Australia": a question typed without its mark
# ("What's more, ..." and "What's annoying is ..." name no thing after it).
_UNMARKED_QUESTION = re.compile(r"^(?:what|where|who|how|when)'s (?:the|a|an|\d)", re.IGNORECASE)
# "The user wondered whether it matters at what time of day the user walks", "The user did briefly wonder
# whether to invent placeholder addresses": a question put as a statement.
_WONDERS = re.compile(
    r"^The user (?:did |was |is )?(?:\w+ly )?wonder(?:s|ed|ing)? (?:whether|if|how|what|why|when|where|which)\b"
    # "The user is curious about what kind of light bulb would be best for a bedroom", "... also curious about their
    # feeding habits" (LongMemEval: 4 survivors; no readable set has one). "curious about Rust" is an interest.
    r"|^The user (?:is|was) (?:also |really |just |a bit |kind of |pretty )?curious "
    r"(?:to know|whether|if|how|what|why|about (?:what|how|whether|if|why|which|his|her|their|its))\b",
    re.IGNORECASE,
)
_TRAILING_JOIN = re.compile(
    r"(?<![\s,;])[\s,;]++(?:and|or|but)\W*$", re.IGNORECASE
)  # see rewrite._TRAILING_FILLER


def is_courtesy(memory: str) -> bool:
    """Whether a memory is a courtesy said to the assistant ("would be most grateful", "hopes you will forgive")."""
    return bool(_COURTESY.search(memory))


# "The assistant was right about the registry-url", "The assistant has saved the user's Sunday": a remark to the
# assistant about itself, not a fact about the user ("The user wants the assistant to ..." has the user as subject).
_ABOUT_THE_ASSISTANT = re.compile(r"^(?:On [\d-]+, )?the assistant\b", re.IGNORECASE)
# "The freeze-flat thing is genius", "Garlic oil is a great tip", "Swimming sounds nice", "The marriage record in
# Liverpool is a good shout": praise for what the assistant suggested (writers D, E, I, L, N, R, T and W; 14
# survivors, none matched). What the user says of someone of theirs ("The user's supervisor is brilliant") is
# left to the decision.
_PRAISED = re.compile(
    r"^(?:On [\d-]+, )?(?!the user\b)(?:\S+\s+){0,7}?(?:sounds?|seems?|looks?|is|are)(?: \w+ly)? "
    r"(?:an? )?(?:really |so |super |very )?"
    r"(?:great|genius|perfect|nice|easiest|fun|good|clever|smart|brilliant|helpful|useful|amazing|fantastic)\b",
    re.IGNORECASE,
)
# "The user likes the idea of using a limited palette", "loves the idea of a creamy dessert", "likes the sound of
# the Watermelon Basil Margarita", "likes the exercises the assistant suggested": the user taking to what the
# assistant just suggested (LongMemEval: 10 survivors, none holding an answer; writer I, 1; no readable set labels
# one). What the user likes of their own is said with it ("The user likes dark roasts") and stays.
_TAKES_TO_THE_SUGGESTION = re.compile(
    r"^(?:On [\d-]+, )?the user (?:really |also |definitely |just )?(?:likes|loves|appreciates|is loving) "
    r"(?:the|that|this|these|those) (?:idea|ideas|options?|suggestions?|exercises|recipes?|tips?|plan|"
    r"sound of (?:the|that|this|these|those|it))\b",
    re.IGNORECASE,
)

# "The user has yogurt, okay the user will do that", "someone changed the env var, okay fixing it now", "The user
# takes book + bookmark one, perfecto": an answer that takes up what the assistant just said (writers D and G;
# 4 survivors, none matched). "okay with" is the user's consent to something and stays.
_TAKES_IT_UP = re.compile(r",\s*(?:okay|ok|perfect|perfecto)\b(?!\s+with\b)", re.IGNORECASE)


# "It's great to see schools taking action on bullying", "It's fascinating to learn about these traditional Lakota
# games", "It sounds like flight attendants have to deal with a lot", "That's really interesting about the
# Harrowing of Hell": the user's remark on what the assistant just told them (LongMemEval: 40 of 1,641 survivors of
# 400 sessions, none a fact about the user; no readable set has one). `rules._REACTION` reads the clause before
# the decision and so shapes the threshold training picks; like every rule here, this one reads the memory after.
_REMARK_ON_THE_ANSWER = re.compile(
    r"^(?:On [\d-]+, )?(?:it|that|this)(?:'s| is| was)? (?:(?:really|so|just|pretty|very|super|quite)\s+)*"
    r"(?:(?:amazing|great|impressive|frustrating|interesting|fascinating|crazy|sad|nice|good|cool|wonderful|"
    r"incredible|awesome|helpful|reassuring|surprising|funny|inspiring|eye-opening|comforting|disappointing|"
    r"heartwarming|exciting|refreshing|mind-blowing|remarkable|astonishing)"
    # "It's fascinating how the Silk Road had such a wide-reaching impact" (LongMemEval: 2 survivors).
    r"(?: to (?:see|think|know|hear|learn|read)\b| about\b| that\b| how\b|,)"
    r"|(?:sounds|seems) like\b)"
    # "It would be great to find a nice place to stay near the lake", "It would be fascinating to learn more about
    # comets": a wish said in passing (LongMemEval: 5 survivors).
    r"|^(?:On [\d-]+, )?it would be (?:(?:so|really)\s+)?(?:great|fascinating|nice|interesting|amazing|awesome|"
    r"helpful|cool|wonderful|good) to\b"
    # "Wow, the 'Picking up the bride' ceremony sounds like a lot of fun", "Those are some great tips for crafting a
    # caption" (LongMemEval: 10 survivors). The user's own news said with a "wow" names the user and stays.
    r"|^(?:On [\d-]+, )?(?:wow|whoa|omg)\b,?\s+(?!the user\b)"
    # "The user completely agrees that watching improv performances can be really helpful" (LongMemEval: 3).
    r"|^(?:On [\d-]+, )?the user (?:\w+ly )?agrees (?:that|with)\b"
    r"|^(?:On [\d-]+, )?(?:those|these) are (?:some |all )?(?:really |very )?(?:great|good|helpful|amazing|fantastic|"
    r"useful|excellent|wonderful) (?:tips|ideas|suggestions|options|recommendations|points|resources)\b",
    re.IGNORECASE,
)


# "By focusing on these tasks, you will be able to clear your inbox", "If your partner is separated from you, you're
# going to have this longing": advice or talk addressed to "you", which the rewrite says as "the assistant" (LongMemEval:
# 18 survivors of its dev sessions, none about the user). A thing described first keeps its idiom: "The soil is
# heavy clay, the kind where in summer you could make bricks out of it" (writer I, a match).
_DESCRIBES_A_THING = re.compile(r"^(?:On [\d-]+, )?The\b")


def _speaks_to_you(memory: str) -> bool:
    lowered = memory.lower()
    return (
        "the user" not in lowered
        and lowered.count("the assistant") >= 2
        and _DESCRIBES_A_THING.match(memory) is None
    )


def is_about_the_assistant(memory: str) -> bool:
    """Whether a memory's subject is the assistant, or what it suggested: a thanks, a verdict on its answer, a
    remark on what it told the user, talk addressed to "you", or an answer taking it up."""
    if _speaks_to_you(memory):
        return True
    return any(
        p.search(memory)
        for p in (
            _ABOUT_THE_ASSISTANT,
            _PRAISED,
            _TAKES_TO_THE_SUGGESTION,
            _TAKES_IT_UP,
            _REMARK_ON_THE_ANSWER,
        )
    )


def is_task_request(memory: str) -> bool:
    """Whether a memory, as written, is something the user asked for once rather than something true of them."""
    if _STANDING.search(memory) or _ASIDE.search(memory):
        return False
    return any(
        p.match(memory)
        for p in (
            _MEANS_TO,
            _NEEDS_HELP,
            _ASKS_ASSISTANT,
            _WANTS_THIS,
            _WANTS_ONE_DONE,
            _ERRAND,
            _APPOINTMENT,
            _UNMARKED_QUESTION,
            _WONDERS,
        )
    )


def without_trailing_join(memory: str) -> str:
    """A memory without the joining word its clause ended on."""
    return _TRAILING_JOIN.sub("", memory)


# "The user is allergic to penicillin, if that matters", "retention is 14 daily + 8 weekly snapshots, in case the
# assistant was about to suggest a forget policy", "..., sorry if the user is slow", "..., ugh": a remark to the
# assistant, or on how the user feels about the fact, not part of it ("carries an EpiPen in case of a
# reaction" is the fact).
# "that bit the assistant can remember": leave to keep what was said (the words, as a pattern fragment).
_LEAVE_TO_KEEP_WORDS = r"(?:bit|part|one)\s+the\s+assistant\s+can\s+(?:keep|remember|save|store|note)"
_TRAILING_ASIDE = re.compile(
    r"(?:,\s*|\s+)(?:(?:just\s+)?in\s+case\s+(?:that|it|this)\s+(?:matters|helps)|if\s+(?:that|it|this)\s+"
    r"(?:matters|helps)|(?:just\s+)?in\s+case\s+the\s+assistant|sorry\s+if)\b[^,]*$"
    r"|,\s*(?:ugh|lol|haha|lmao)\W*$"
    # "..., which is lovely", "..., which is more than can be said for the receptionist": how the user feels about
    # it. Not when a reason follows: "which is a real problem because we live in a walk-up" holds a fact.
    r"|,\s*which\s+(?:is|was|'s)\s+(?:(?:a|an)\s+)?(?:(?:real|bit\s+of\s+a|big)\s+)?(?:problem|pain|ordeal|nightmare|"
    r"funny|lovely|fair|annoying|hilarious|ironic|weird|going\s+to\s+be\s+fun|more\s+than)\b"
    r"(?!.*\b(?:because|since|as)\b).*$"
    # "..., that bit you can remember": leave to keep what was said (after a credential it was told to drop).
    rf"|,\s*(?:that|this)\s+{_LEAVE_TO_KEEP_WORDS}\W*$",
    re.IGNORECASE,
)
_MIN_ASIDE_HEAD_WORDS = 3  # "Order number is #48213 if that matters" keeps its three words


def without_aside(memory: str) -> str:
    """A memory without the remark to the assistant tagged on its end; unchanged when what is left would be
    shorter than `_MIN_ASIDE_HEAD_WORDS`."""
    found = _TRAILING_ASIDE.search(memory)
    if found is None:
        return memory
    head = memory[: found.start()].rstrip(" ,")
    return head if len(head.split()) >= _MIN_ASIDE_HEAD_WORDS else memory


# "Team convention", "Monthly bills", "60k customers": a heading or a list item without its statement. Of the
# survivors this short across the sets by other writers, only a "Label: value" one was labelled (6 to 1).
_MIN_FACT_WORDS = 3


# "The Nordics storefront bit the assistant can keep": leave to keep something said elsewhere, no fact itself.
_LEAVE_TO_KEEP = re.compile(
    rf"^.{{0,60}}\b{_LEAVE_TO_KEEP_WORDS}\W*$",
    re.IGNORECASE,
)


def is_leave_to_keep(memory: str) -> bool:
    """Whether a memory only tells the assistant which earlier part it may keep."""
    return _LEAVE_TO_KEEP.match(memory) is not None


# An answer without its verb read as an instruction: "always with breakfast and dinner" (when metformin is
# taken), "always formal, usted, never tú" had become "The user wants the assistant to always with ...".
_VERBLESS_INSTRUCTION = re.compile(
    r"^(?:On [\d-]+, )?the user wants the assistant (?:not )?to (?:always |never )?"
    r"(?:with|in|on|at|for|by|before|after|from|to|a|an|the|every|any|some|formal|informal)\b",
    re.IGNORECASE,
)


def is_verbless_instruction(memory: str) -> bool:
    """Whether a memory reads as a wish for the assistant to do something but names no verb to do."""
    return _VERBLESS_INSTRUCTION.match(memory) is not None


# ", and on inspection the user finds the NAS share is 98% full": what is left of a sentence whose quoted
# message was taken out opens on the punctuation that joined it.
_OPENS_MID_SENTENCE = re.compile(r"^\s*[,;:)\]]")
# "For photo uploads on the bakery's ordering site", "By long-standing company policy": a phrase that opened a
# sentence whose subject and verb were split off. It names no one, no auxiliary or past tense, and has no comma
# before which a statement could stand ("For long rides, the user sets a 50% temp basal", "With the user's
# club, Wielerclub De Kei, ..." stay).
_PHRASE_ALONE = re.compile(
    # "Speaking of noodles", "As for the user's 10K goal": a turn of the conversation with nothing said after it
    # (LongMemEval: 2 survivors, none holding an answer).
    r"^(?:speaking of|as for|as to|regarding|re:?)\s(?![^,;:]*[,;:])(?!.*\b(?:is|are|was|were|has|have|had)\b)"
    r"|^(?:for|by|with|from|about|of|to|under|via|per|through|during)\s"
    r"(?![^,;:]*[,;:])"
    r"(?!.*\b(?:the user|i|we|they|he|she|it|is|are|was|were|has|have|had|will|would|can|could|must|should|"
    r"do|does|did|goes|go|gets|got|keeps|makes|runs|uses|takes|needs|wants|\w+ed)\b)"
    # "5 hours actually", "Still 14 minutes though", "Only 4 hours of sleep": a span said alone, the answer to a
    # question the memory does not hold (writers O, P and S; none matched).
    r"|^(?:On [\d-]+, )?(?:still |only |about |like |just |roughly )?(?:\d+|one|two|three|four|five|six) "
    r"(?:minutes?|mins?|hours?|hrs?|days?|seconds?|secs?)(?: of \w+)?(?: actually| though| now)?\W*$"
    # "Like granola bars, nuts, and energy drinks", "Like the user's parents and siblings", "Like increasing the
    # user's water intake": the examples of what the clause before said (LongMemEval). "Like the user is learning
    # Japanese" (a filler "like" before a subject and its verb) says something, and stays, as does an example
    # with what the user did there ("Like the charity walk on April 17th, where the user raised $250").
    r"|^(?:On [\d-]+, )?like\s(?!(?:the user|i|we|they|he|she|it)(?!['’]s)\s)(?!.*\b(?:the user|i|we)\s+\w)",
    re.IGNORECASE,
)


def is_fragment(memory: str) -> bool:
    """Whether a memory is too short to state anything (under `_MIN_FACT_WORDS` words and no "label: value"),
    opens mid-sentence, or is a prepositional phrase or a turn of the conversation alone ("Speaking of noodles")."""
    return (":" not in memory and len(memory.split()) < _MIN_FACT_WORDS) or bool(
        _OPENS_MID_SENTENCE.match(memory) or _PHRASE_ALONE.match(memory)
    )


# "planning mode:", "Planning notes:": a line of a few words ending in a colon heads the list below it. Read
# as a clause it became "The user is planning mode" (2 survivors on the outside writers' sets, none matched).
_HEADING = re.compile(r"^\W*[\w'’/&+-]+(?:\s+[\w'’/&+-]+){0,3}\s*:\s*$")


def is_heading(clause: str) -> bool:
    """Whether a clause, as written, is a heading: up to four words and a colon that ends it."""
    return _HEADING.match(clause) is not None


# A clause that is only the condition or the reason, its main clause lost: "When the assistant writes a fix",
# "Because the user definitely wants to pay 2% fees forever" (sarcasm, or half of a thought), "Now that the user
# has some tips on taking good photos", "Since the user has been experimenting with different flavor combinations"
# (LongMemEval). "Since then ..." is a time, not a reason, and says what follows it.
_LONE_SUBORDINATE = re.compile(
    r"^(?:because\b|(?:if|when|whenever) the assistant\b|now that\b|(?:since|while|although|whereas)\b(?! then\b))"
    r"[^,;:]*$",
    re.IGNORECASE,
)
# Where a statement cut short can be shortened to the whole one before it: ", and", ", ", " so ", " but ".
_BREAK = re.compile(r",\s*(?:and\s+|but\s+|so\s+)?|\s+(?:so|but)\s+", re.IGNORECASE)
_MIN_KEPT_WORDS = 4


def _ends_on_bare_copula(memory: str) -> bool:
    return bool(_DANGLING_COPULA.search(memory)) and not _EMBEDDED_QUESTION_END.search(memory)


def is_unfinished(memory: str) -> bool:
    """Whether a memory ends on a word that needs what follows it, or on a pronoun for what it is about, or
    is a condition or reason without what it conditions."""
    return bool(
        _DANGLING_END.search(memory)
        or _SAID_NOTHING.match(memory)
        or _ends_on_bare_copula(memory)
        or _OBJECT_ELSEWHERE.search(memory)
        or _DONE_TO_A_PRONOUN.search(memory)
        or _AT_A_PRONOUN.search(memory)
        or _LONE_SUBORDINATE.search(memory)
    )


def head_before(memory: str, position: int) -> str | None:
    """The whole statement before the last clause break (", and", ", ", " so ", " but ") ahead of `position`;
    None when there is no break there or what precedes it is too short or itself unfinished."""
    breaks = [b for b in _BREAK.finditer(memory) if b.end() <= position]
    if not breaks:
        return None
    head = memory[: breaks[-1].start()].rstrip()
    return head if len(head.split()) >= _MIN_KEPT_WORDS and not is_unfinished(head) else None


# "The user has celiac disease so everything the user eats has to be gluten-free": what follows from the fact.
# "We already run Redis 7 on Upstash so use that": what the assistant is to do with it, said to one that is
# gone once the session is.
_CONSEQUENCE = re.compile(
    r"(?:,\s*|\s+)(?:so|which means)\s+"
    r"(?=(?:the|if|everything|anything|food|that|it|he|she|they|we|i|any|my|there|this|a|an)\b"
    r"|(?:use|keep|go with|stick (?:to|with)|pick|factor|bear)\b[^,]{0,25}\b(?:that|it|this|them|those)\W*$)",
    re.IGNORECASE,
)


# "..., which has made a couple of hospital visits interesting", "..., which is a bit of a problem since ...": what
# the user thinks of the whole statement, not a fact about a thing in it ("..., which rehearses Wednesdays" is).
_COMMENT = re.compile(
    r",\s+which\s+(?:(?:is|was|has been)\s+(?:\w+ly\s+|kind of\s+|a bit\s+)?(?:a\s+)?(?:bit of a\s+)?"
    r"(?:problem|pain|relief|mess|nightmare|joke|fun|funny|annoying|great|nice|lovely|insane|weird|odd|typical|"
    r"frustrating|stressful|hilarious|ironic|unfortunate|handy|going to be)"
    r"|makes|made|has made|has saved|has given|means)\b",
    re.IGNORECASE,
)


def without_consequence(memory: str) -> str:
    """A memory without what follows from it or why it is said, when the statement before stands alone and
    what follows is one clause (a tail that goes on past a comma may carry facts of its own)."""
    found = _CONSEQUENCE.search(memory) or _COMMENT.search(memory)
    if found is None or "," in memory[found.end() :]:
        return memory
    head = memory[: found.start()].rstrip(" ,")
    return head if len(head.split()) >= _MIN_KEPT_WORDS and not is_unfinished(head) else memory


# "Since I'm type 1 diabetic, is there anything I should watch for?": the question goes, and what is left is the
# reason, which states the fact. "Because ..." stays whole: said alone it is as often sarcasm or half of a
# thought (`_LONE_SUBORDINATE`).
_LONE_REASON = re.compile(
    r"^(?P<date>On [\d-]+, )?(?:since|as|given that) (?P<fact>the user\b[^,;:]*)$", re.IGNORECASE
)


def without_lone_reason(memory: str) -> str:
    """A memory that is only a reason ("Since the user is type 1 diabetic") said as the statement it gives."""
    found = _LONE_REASON.match(memory)
    if found is None:
        return memory
    return with_date(found.group("date"), found.group("fact"))


def without_unfinished_tail(memory: str) -> str:
    """A memory whose last part ends on a bare copula, shortened to the whole statement before that part
    ("The user works from home so this is" -> "The user works from home"); unchanged when there is none."""
    if not _ends_on_bare_copula(memory):
        return memory
    return head_before(memory, len(memory)) or memory


# Dictated speech asks without a question mark: "The user's team has three AWS accounts, what's the sane way to do
# remote state" keeps the fact and drops the question; "Any tips for sleeping during the day", "Quick question
# what's the difference between a Roth IRA and a traditional one" are only questions (writers D and M).
_ASKED_WITHOUT_MARK = (
    r"what(?:'s| is| are| would| should| do| does| can)|how (?:do|does|can|should|would|much|many)|"
    r"should the user|can the user|could the assistant|would the assistant|is there (?:a|any) way|"
    # "..., is there anything over the counter that would mess with that", "..., is ibuprofen ok w/ that",
    # "..., where should it go" (writers D and G).
    r"is there (?:anything|something)|is \w+ (?:ok|okay|fine|safe)|where should|"
    # "Have you got any suggestions on must-see places", "do you think it's a good idea to ...", "Was the Astrolabe
    # an advanced instrument for the times or ...", "In what ways do ..." (LongMemEval: 6 survivors, none
    # holding an answer; no readable set has one).
    r"(?:have|has|do|does|did|are|were|will|would|can) the assistant|was the|were there|in what ways"
)
_QUESTION_TAIL = re.compile(rf",\s+(?:{_ASKED_WITHOUT_MARK})\b[^,;]*$", re.IGNORECASE)
_ONLY_A_QUESTION = re.compile(
    rf"^(?:On [\d-]+, )?(?:(?:quick|one|another|random|dumb|silly) (?:question|q)\W*)?"
    rf"(?:{_ASKED_WITHOUT_MARK}|any (?:tips|ideas|advice|suggestions|recommendations))\b",
    re.IGNORECASE,
)


def _before_question_tail(memory: str) -> str | None:
    """What a memory says before a question asked after it without a question mark; None without one."""
    found = _QUESTION_TAIL.search(memory)
    return None if found is None else memory[: found.start()].rstrip(" ,")


def without_question_tail(memory: str) -> str:
    """A memory with a question asked after it without a question mark cut off, when the statement before it
    stands alone; unchanged otherwise."""
    head = _before_question_tail(memory)
    if head is None:
        return memory
    return head if len(head.split()) >= _MIN_KEPT_WORDS and not is_unfinished(head) else memory


def is_unmarked_question(memory: str) -> bool:
    """Whether a memory is only a question asked without a question mark, or one after a clause that cannot stand
    without it ("Now that the user has a good idea for the gift, do the assistant think ...")."""
    if _ONLY_A_QUESTION.match(memory) is not None:
        return True
    head = _before_question_tail(memory)
    return head is not None and is_unfinished(head)

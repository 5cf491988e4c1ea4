"""Shared word lists: stop words, relations, frequencies (pattern fragments, not compiled)."""

# A standard short English stop list plus the subjects normalisation introduces ("user", "the
# assistant"), so "I prefer X" and "User prefers X" compare equal.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now
    of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself also us mine
    it's i'm i've i'd we're we've that's there's user user's users assistant assistant's please
    really""".split()
)

FEMALE = (
    "daughter|mother|mom|mum|wife|sister|girlfriend|grandmother|grandma|aunt|niece|stepdaughter|granddaughter|"
    "fiancée|fiancee|stepmother|stepmom|mother-in-law|sister-in-law"
)
MALE = (
    "son|father|dad|husband|brother|boyfriend|grandfather|grandpa|uncle|nephew|stepson|grandson|fiancé|fiance|"
    "stepfather|stepdad|father-in-law|brother-in-law"
)
NEUTRAL = "partner|spouse|kid|child|boss|manager|landlord|landlady|friend|roommate|colleague|cofounder|grandchild|cousin"
RELATION = f"{FEMALE}|{MALE}|{NEUTRAL}"
PETS = (
    "dog|cat|puppy|kitten|rabbit|bunny|parrot|hamster|horse|tortoise|turtle|"
    # A dog called by its breed: "my greyhound Biscuit", "our beagle".
    "greyhound|beagle|terrier|spaniel|labrador|collie|poodle|retriever|dachshund|shiba|husky|pug|whippet|"
    "lurcher|corgi|schnauzer"
)
# Who sees to the user's health by trade ("my physio", "my endo"), beside "doctor" and "therapist".
CLINICIANS = (
    "physio|physiotherapist|dentist|psychiatrist|dietitian|nutritionist|midwife|gp|endo|endocrinologist|"
    "neurologist|cardiologist|dermatologist|rheumatologist|oncologist|surgeon|psychologist|counsellor|counselor|"
    "optician|pharmacist|osteopath|chiropractor|podiatrist|allergist|paediatrician|pediatrician|consultant"
)
# People the user deals with by role, who a later "he" or "she" can mean ("my advisor ... she wants drafts").
ROLES = (
    "flatmate|housemate|advisor|supervisor|doctor|therapist|accountant|trainer|coach|tutor|lawyer|mentor|"
    f"neighbour|neighbor|nanny|babysitter|vet|cleaner|contractor|{CLINICIANS}"
)
# Trades a user names themselves by ("Master electrician, I run a four-person shop", "Line cook at a pasta place").
OCCUPATIONS = (
    "nurse|electrician|plumber|carpenter|welder|mechanic|cook|chef|baker|barista|bartender|server|waiter|waitress|"
    "teacher|lecturer|professor|librarian|researcher|scientist|engineer|developer|dev|programmer|designer|"
    "architect|analyst|accountant|bookkeeper|lawyer|attorney|barrister|solicitor|paralegal|doctor|physician|"
    "surgeon|dentist|pharmacist|paramedic|midwife|firefighter|farmer|gardener|landscaper|driver|pilot|translator|interpreter|"
    "writer|journalist|editor|photographer|illustrator|freelancer|contractor|consultant|sysadmin|"
    "administrator|technician|student|postdoc|veterinarian|vet|therapist|physiotherapist|physio|tutor|"
    "carer|caregiver|cleaner|receptionist|recruiter|officer|guard|soldier|founder|cofounder|co-founder"
)
# Things a later "it" can mean: "my router keeps dropping wifi. it's a TP-Link Archer AX55".
POSSESSIONS = (
    "printer|router|modem|laptop|computer|pc|macbook|phone|tablet|car|bike|van|mortgage|loan|lease|flat|"
    "apartment|house|boiler|server|cluster|database|repo|repository|app|website|site|pipeline|account|card|"
    "subscription|contract|insurance|pension|thesis|dissertation|backend|frontend|api|service|project|game|"
    "garden|allotment|blog|newsletter|shop|store|startup|kitchen|podcast|tv|camera|watch|monorepo|homelab"
)
PROFILE_ATTR = (
    r"name|email|e-mail|phone|phone number|number|address|birthday|timezone|time zone|pronouns|username|"
    r"handle|title|job title|role|team|employer|company|native language|language|id|account|"
    r"account id|account number|member number|customer number|frequent flyer number|passport"
)
# Whose reference the user gives as their own ("customer ID BK-77310-Q", "student ID 2291847"): the keys of an
# account or a record of the user's. An order's, a ticket's or a case's number is the session's, never theirs.
OWN_ID_KEY = (
    r"customer|student|account|member|membership|employee|staff|patient|policy|loyalty|subscriber|client|"
    r"library card|frequent flyer|nhs"
)
# "customer ID BK-77310-Q", "my member number: 55120-3": the label (`key`) and the value, which holds a digit ("account
# number please" has none). Case-insensitive; anchored by its users.
OWN_IDENTIFIER = (
    rf"(?:my\s+)?(?P<key>(?:{OWN_ID_KEY})\s+(?:id|number|no\.?|#))\s*(?:is\s+|:\s*)?"
    r"(?P<value>[A-Za-z0-9][\w/-]*\d[\w/-]*)"
)

TIMEZONES = (
    r"utc(?:[+-]\d{1,2})?|gmt(?:[+-]\d{1,2})?|cet|cest|eet|eest|wet|west|bst|ist|jst|kst|aest|aedt|nzst|"
    r"est|edt|cst|cdt|mst|mdt|pst|pdt|akst|hst|[a-z]+/[a-z_]+"
)
RECURRING = (
    r"\b(?:every|each) (?:day|week|month|year|morning|evening|night|weekday|weekend|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|other \w+)\b|\b(?:daily|weekly|monthly|yearly|annually)\b|"
    r"\b(?:once|twice|\w+ times) (?:a|per) (?:day|week|month|year)\b|\bon (?:mondays|tuesdays|wednesdays|"
    r"thursdays|fridays|saturdays|sundays|weekends|weekdays)\b"
)
# A weekday's name in the singular, as a pattern: "on Friday" is one day, "on Fridays" (WEEKDAY + "s") a routine.
WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# The days' and months' names, capitalised like a name but never one ("on Monday", "since March").
CALENDAR_NAMES = frozenset(
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August "
    "September October November December".split()
)
FREQUENCY = (
    "always|never|usually|typically|normally|generally|often|sometimes|rarely|mostly|really|strongly|"
    "definitely|also|still|much"
)
ADVERBS = rf"(?:(?:{FREQUENCY}) )*"

# Irregular past tenses (and the verbs whose past is their present, "put", "set"): the rewrite leaves them as they
# are ("The user sold", not "solds"), and the rules after the decision read them as a past event.
PAST_IRREGULAR = frozenset(
    "broke went got saw had made took bought sold left met ran came gave found began wrote read lost won paid "
    "spent told said felt kept thought grew knew became drove flew fell chose forgot heard held built sent "
    "brought caught taught fought sat stood understood hit put set cut quit split did was were ate drank rode "
    "spoke slept swam threw wore woke forgot drew sang shook blew dug hung lent meant bent lit led fed shot struck "
    "stuck swung bit hid spun sank rang stole froze rose tore swore beat cost hurt let shut spread burst".split()
)

"""What holds only for the hours around the session is not a memory; the same words as a habit or with a
year are."""

from collections.abc import Callable

import pytest

from cairn_promotion.transient import is_transient


@pytest.mark.parametrize(
    "said",
    [
        # An incident timed by the clock (writers H, P and S).
        "Checkout has been down since 9",
        "The API has been throwing 502s since 10:40",
        "Half the users can't resolve api.shopcart.io since the cutover at 14:00",
        "Vite build is dying on CI, started about an hour ago after I merged the charts PR",
        "a customer ticket came in 20 minutes ago",
        "One node has been NotReady for about 10 minutes",
        "Pods getting evicted since ~09:10",
        "Started right after the 14:02 deploy",
        "Started: 14:05 UTC",
        # An errand before a clock time (writers P, Q, S and X).
        "Pick up the dry cleaning before 6",
        "Errands: dry cleaning, return amazon pkg, milk before 6",
        # A complaint about the thing the session is fixing (writers L, Q and X).
        "The Grafana alert for pod restarts is super noisy",
        "Disk alert spam all nite 🙄 its set at 70%",
        "Server components are making styled-components painful",
        # How the body feels as the user writes (writers G and W).
        "I have cold now, sore throat 2 days",
        "my chest is tight",
        # How far behind something is as the session is written (writers O and V).
        "we're two minors behind on EKS",
        "I'm behind on my own repo",
        # What works as the fault is tracked down (writers A and T).
        "my phone is fine on the same network",
        "The light is green and it feeds fine, but nothing printed",
        "The test passes locally on my Windows VM with that change",
        # The day's errands and where their places are (writers M, Q and AA).
        "I have to pick up groceries drop a package at the post office",
        "Pick up dry cleaning (Main St)",
        "dry cleaner is near the grocery, ups store other side of town",
        # A cup counted, a step of this session's fix (writers D and S).
        "I'm on my second coffee and it's not helping",
        "I had two coffees before",
        "running on one coffee and the build's been red since about half eight",
        "I just tried pinning --platform linux/amd64 and the container starts locally now",
        "I will try micro-batch 8 with accumulation 4",
        "I shall take a copy of the database file before I begin",
        "I intend to raise the matter with her GP",
        # A status as the session is written, a step just taken (writers E, N, R and S).
        "The pods are stable",
        "my mother is fine",
        "my manager Dana is out sick",
        "my sister Claire is on holiday in Crete",
        "my mother Rosa is okay, just bruised",
        "my dad Tomasz is being grumpy about it",
        # Where the user is as they write (writers I, V and W).
        "I'm on the way back from a three-day work trip",
        "I'm on my phone on the train",
        "I'm in a dark room typing this with one eye",
        "I'm kinda panicking",
        "one client still hasn't paid an invoice from November which is stressing me out",
        "I have closed the blinds",
        "I restarted the app container and it's still happening",
        "I'm going to lie down in a dark room now",
        "my bank app keeps logging me out",
        "I have checked, and the time on the thermostat was indeed an hour adrift",
        # An absence with its end in sight (writer N).
        "Our accountant Mr Pryce is away until the end of the month",
        # A one-off event of an account, a bill or a system (writers M, P, S, Z and the in-style dev half).
        "Just paid an $85 PT copay",
        "I just ate onigiri from the konbini",
        "I just got a $1,240 ER bill from the ankle thing in March",
        "my husband Tomás has a birthday coming up",
        "my daughter Ines is turning 7",
        "Order #558201 was charged twice",
        "They got double billed for march",
        "Invoice #112 is 30 days overdue",
        "Site-to-site between the two offices keeps flapping on IPsec",
        "Prod is throwing 500s on POST /v1/invoices",
        "Friday's deploy broke checkout for 40 min",
        # The fault the session is about (writers E, O, Q, R, S, V and Y).
        "The payments worker pods keep getting OOMKilled",
        "PagerDuty isn't routing alerts from the new Alertmanager to the right team",
        "Grafana API is giving me 401s when provisioning dashboards from CI",
        "Buffer full, loki returning 429",
        "It segfaults on the second loop iteration",
        "New emails don't show up",
        "Order #48213 never showed up",
        "Order 99120 hasn't arrived",
        "my flight is delayed 3 hours at Frankfurt",
        "Lint passes now but kubeconform complains about an empty limits block",
        # The fault said by its signs (writers D, L, M, V and Y).
        "The crashloop is the payments worker and the logs just say exit code 137",
        "no idea why, the load balancer health checks are like flapping",
        "`TestSettle` times out in CI about 1 in 10 runs",
        "we're getting leader elections every few minutes",
        "A quiz I published is showing 12 points possible when it should be 10",
        # Today said at either end, in the languages writer C mixes in.
        "Hoy leí el paper de Hughes 2018",
        "Aaj fasting sugar 180 aaya, thoda tension ho raha hai",
        "my wifi keeps dropping every 10 minutes or so, desde ayer",
        "Lost 3 kg this month",
        # A reading as the session is written.
        "The disk on db-3 is at 91%",
        "Fsync p99 is at 40ms",
        "It has been clicking since Tuesday",
        # A ticket and what its reporter says (writers B, E, F and V).
        "Customer on ZD-55812 is furious, got double-charged $120",
        "A few patients say the appointment confirmation emails are landing in their junk folder",
        "PAY-2231 is red on CI again",
        "Escalating SUP-11007 from Brightline Logistics",
        # A day of this week or the next (writers A, H, K, M, R, W, X and AA).
        "my brother Tomás turns 40 this Saturday",
        "I'm picking up a rescue greyhound next Saturday",
        "I fly to Osaka next week",
        "party for my son Kuba tmrw, 8 kids",
        "I've been stress-eating all week with a deadline at work",
        "Lindqvist is booked out all week",
        "quarterly estimated tax is due in two days",
        "my partner Jordan's birthday is in two weeks",
        "I'm getting ACL surgery sometime next month, date not confirmed yet",
        "I've had lower back pain for about 3 days after moving furniture",
        "my partner's parents are coming over for dinner next weekend",
        "we had a particularly worrying set of readings only last Tuesday",
        # One weekday said alone (writers A, B, E, W and AA).
        "Meera's friend has a birthday party on Saturday",
        "I land at Kansai on Tuesday afternoon and the flight's a red-eye",
        "I had a TSH test on Tuesday",
        "The deadline is Friday",
        "Next block starts Thursday",
        # What the user can do about this session's problem, or could not do once (writers H, I, M, O, W and X).
        "I can't change the linter config from the PR",
        "I can only open files read-only",
        "I can run the describe-db-instances command myself and paste the values",
        "I can't export reports from my account",
        "I couldn't sleep after night shift",
        # A step the user has taken, or took once (writers E, I, N, P, T, V, X and Z).
        "I have applied your suggestions",
        "I have not altered the code in several months",
        "I've shortlisted two venues",
        "I silenced the alert until 14:00",
        "I bumped the memory limit to 1Gi as a stopgap",
        "I woke up with a sore throat and a fever of 100.8",
        "I spent Tuesday evening with a pencil and paper trying to arrange everything",
        "I went to a records office last spring",
        # A closing time on the day of an errand, and where the user is in the day (writers L, O, S, V and AA).
        "The post office closes at 5, the shop with the jacket at 6",
        "the depot closes at 4",
        "I'm off at 18:00",
        "I'm starting from home at 2pm",
        # What the user will do next about the conversation (writers I and S, LongMemEval).
        "I'll definitely check out those resources to find upcoming coin shows",
        "I will have to write this up",
        "I'll have a proper sit down with Sandra about a SIPP as well",
        "I'll get Alan to log his too",
        # How the user feels about what the conversation just gave them (LongMemEval).
        "I'm excited to try out the new beans in my French press",
        "I'm really looking forward to trying out my new hybrid bike on those routes",
        "I'm glad you mentioned the Indie Next List",
        "I'm curious to know if there's a way to see which posts are performing well",
    ],
)
def test_what_holds_for_hours_is_not_a_memory(said: str, memory_of: Callable[[str], str | None]) -> None:
    assert memory_of(said) is None


@pytest.mark.parametrize(
    ("said", "memory"),
    [
        ("I have lived in Porto since 2019", "The user has lived in Porto since 2019"),
        ("I have been vegetarian since 9th grade", "The user has been vegetarian since 9th grade"),
        ("I don't take meetings before 10", "The user doesn't take meetings before 10"),
        ("I try to be in bed by 22:30 every night", "The user tries to be in bed by 22:30 every night"),
        ("I'm trying to cut coffee to one cup a day", "The user is trying to cut coffee to one cup a day"),
        ("The office opens at 9 and closes at 6", "The office opens at 9 and closes at 6"),
        ("I have had asthma since childhood", "The user has had asthma since childhood"),
        ("I run for 30 minutes every morning", "The user runs for 30 minutes every morning"),
        ("we shall always deploy on Tuesdays", "The user's team shall always deploy on Tuesdays"),
        ("we keep backups for 30 days", "The user's team keeps backups for 30 days"),
        ("my mother is fine with dogs in the house", "The user's mother is fine with dogs in the house"),
        ("My printer keeps dropping off the wifi", "The user's printer keeps dropping off the wifi"),
        # A lasting fact before the fault's "and" keeps the memory.
        (
            "Prod runs on EKS in eu-west-1 and the checkout pods keep getting OOMKilled",
            "Prod runs on EKS in eu-west-1 and the checkout pods keep getting OOMKilled",
        ),
        ("I pay my rent on the 1st", "The user pays the user's rent on the 1st"),
        ("I have two coffees a day", "The user has two coffees a day"),
        ("our API sits behind Traefik", "The API sits behind Traefik"),
        ("I get a sore throat every winter", "The user gets a sore throat every winter"),
        ("I check my spam folder every morning", "The user checks the user's spam folder every morning"),
        (
            "I have blackout curtains and a white noise machine, which usually work fine",
            "The user has blackout curtains and a white noise machine, which usually work fine",
        ),
        (
            "I fill my prescriptions at the Costco pharmacy",
            "The user fills the user's prescriptions at the Costco pharmacy",
        ),
        # A limit or a setting is not the fault ("The session times out after 30 minutes").
        ("The session times out after 30 minutes", "The session times out after 30 minutes"),
        ("my train is delayed every winter", "The user's train is delayed every winter"),
        ("Clients are on net 30 with a 2% late fee", "Clients are on net 30 with a 2% late fee"),
        ("Rent went up to £1,320 from this month", "Rent went up to £1,320 from this month"),
        (
            "we decided to do £300 a month into the SIPP, starting next month",
            "The user's team decided to do £300 a month into the SIPP, starting next month",
        ),
        ("The loan's at 7.9%", "The loan's at 7.9%"),
        ("I just adopted a greyhound named Biscuit", "The user just adopted a greyhound named Biscuit"),
        (
            "most of our customers are in Ontario right now",
            "Most of the customers are in Ontario right now",
        ),
        ("I work from home on Mondays and Fridays", "The user works from home on Mondays and Fridays"),
        # Two weekdays, a part of the day in the plural, a word of routine (writers J, P and R).
        (
            "my team only deploys to prod on Tuesday and Wednesday",
            "The user's team only deploys to prod on Tuesday and Wednesday",
        ),
        ("I coach them on Saturday mornings", "The user coaches them on Saturday mornings"),
        ("Training is tuesday and thursday evenings", "Training is tuesday and thursday evenings"),
        (
            "my swim mornings are Monday, Wednesday and Friday",
            "The user's swim mornings are Monday, Wednesday and Friday",
        ),
        ("I call my mum on Sunday every week", "The user calls the user's mum on Sunday every week"),
        ("I listen to podcasts on the train", "The user listens to podcasts on the train"),
        ("I'm okay with spicy food", "The user is okay with spicy food"),
        # A rule before a clock time is no errand (in-style writers AC and AE).
        (
            "recon-settlements must finish before 06:00 UTC",
            "Recon-settlements must finish before 06:00 UTC",
        ),
        ("nothing before 13:00 on Fridays", "Nothing before 13:00 on Fridays"),
        # What the user can take, eat or stand, when they can do plans, and the team's rule last (dataset_v2
        # dev, writers F and H, writer Q).
        ("I can't take ibuprofen", "The user can't take ibuprofen"),
        ("I can't stand lyrics when I'm working", "The user can't stand lyrics when the user is working"),
        ("I can't do plans before 3pm on weekdays", "The user can't do plans before 3pm on weekdays"),
        ("I can't eat gluten at all", "The user can't eat gluten at all"),
        (
            "we cannot use services hosted outside the EU",
            "The user's team cannot use services hosted outside the EU",
        ),
        # What the user decided to do.
        (
            "I will open a Roth IRA and max it every year",
            "The user will open a Roth IRA and max it every year",
        ),
        ("I'll rebalance once a year in January", "The user will rebalance once a year in January"),
        # Nerves that last and what the user is curious about.
        ("I get nervous speaking in public", "The user gets nervous speaking in public"),
        ("I'm curious about Rust", "The user is curious about Rust"),
        # A place's hours and the user's working day as a habit.
        ("The restaurant is closed Sundays and Mondays", "The restaurant is closed Sundays and Mondays"),
        ("the office closes at 6pm on weekdays", "The office closes at 6pm on weekdays"),
        ("I'm off at 17:00 every Friday", "The user is off at 17:00 every Friday"),
        # Years spent somewhere, a school gone to, access held and what the user saw are the user's.
        ("I spent ten years in Berlin", "The user spent ten years in Berlin"),
        ("I went to the University of Leeds", "The user went to the University of Leeds"),
        ("I have read-only access to Metabase", "The user has read-only access to Metabase"),
        (
            "I saw 10 amateur comedians perform at the open mic",
            "The user saw 10 amateur comedians perform at the open mic",
        ),
    ],
)
def test_a_habit_or_a_year_stays(said: str, memory: str, memory_of: Callable[[str], str | None]) -> None:
    assert memory_of(said) == memory
    assert not is_transient(memory)

"""The one list of hazard categories every moderator speaks: the MLCommons AI Safety hazard taxonomy
as Llama Guard 3 uses it (S1-S14), so the offline classifier, a Llama Guard endpoint and the
deployment's refusal settings agree on what a category means.

Each category has the short name Llama Guard 3's prompt lists, the plain words a refusal shows a
person, and a description (what the offline classifier's training data was sorted by).
"""

from __future__ import annotations

from dataclasses import dataclass

SAFE = "safe"


@dataclass(frozen=True)
class HazardCategory:
    """One hazard of the taxonomy (S1-S14): its code, Llama Guard's name and the words a refusal uses."""
    code: str
    guard_name: str  # as listed in Llama Guard 3's prompt
    plain_words: str  # what a refusal names
    description: str


HAZARD_CATEGORIES: tuple[HazardCategory, ...] = (
    HazardCategory("S1", "Violent Crimes", "violence against people or animals",
                   "murder, assault, kidnapping, terrorism, threats, hurting or killing a person or an animal"),
    HazardCategory("S2", "Non-Violent Crimes", "crime such as fraud, theft, hacking or drugs",
                   "fraud, scams, theft, burglary, hacking, malware, money laundering, counterfeiting, "
                   "illegal drugs and weapons trafficking"),
    HazardCategory("S3", "Sex Crimes", "sex crimes",
                   "sexual assault, sex trafficking, sexual harassment, prostitution"),
    HazardCategory("S4", "Child Exploitation", "the sexual exploitation of children",
                   "sexual content involving minors, grooming or abuse of children"),
    HazardCategory("S5", "Defamation", "defamation",
                   "false statements of fact that damage the reputation of a real person or organisation"),
    HazardCategory("S6", "Specialized Advice", "dangerous specialised advice",
                   "unsafe medical, legal or financial advice presented as professional guidance"),
    HazardCategory("S7", "Privacy", "someone's private information",
                   "exposing personal data, doxxing, stalking, tracking a person, stealing identities"),
    HazardCategory("S8", "Intellectual Property", "intellectual property theft",
                   "piracy, counterfeit goods, infringing copyrights, trademarks or patents"),
    HazardCategory("S9", "Indiscriminate Weapons", "weapons of mass harm",
                   "chemical, biological, radiological, nuclear weapons, explosives and bombs"),
    HazardCategory("S10", "Hate", "hate against people for who they are",
                   "demeaning or dehumanising people for race, religion, gender, sexuality, disability; "
                   "harassment and hate speech"),
    HazardCategory("S11", "Self-Harm", "suicide and self-harm",
                   "suicide, self-injury, eating disorders, encouraging someone to hurt themselves"),
    HazardCategory("S12", "Sexual Content", "sexual content",
                   "explicit sexual descriptions, erotica, pornography"),
    HazardCategory("S13", "Elections", "election misinformation",
                   "false information about voting, election fraud claims, manipulating elections"),
    HazardCategory("S14", "Code Interpreter Abuse", "abuse of code execution",
                   "code that escapes sandboxes, denial of service, abusing an interpreter to attack the system"),
)

BY_CODE: dict[str, HazardCategory] = {c.code: c for c in HAZARD_CATEGORIES}
HAZARD_CODES: tuple[str, ...] = tuple(BY_CODE)


def plain_words(code: str | None) -> str:
    """What a person is told a refused request touched; an unknown code (a keyword list's own
    category, a deployment's term) is named generically."""
    category = BY_CODE.get((code or "").upper())
    return category.plain_words if category else "content this service does not help with"

"""The refusal a person sees when a question or an answer is judged harmful: one short sentence in
the question's language that names what the request touched in plain words, with no lecture and no
model call (a refusal must not cost a generation, nor be talked out of by the model).

Languages without a template here get the English one.
"""

from __future__ import annotations

from keel.core.safety_taxonomy import BY_CODE, plain_words

REFUSAL_TEMPLATES: dict[str, str] = {
    "en": "I can't help with that: it involves {topic}.",
    "de": "Dabei kann ich nicht helfen: Es geht um {topic}.",
    "fr": "Je ne peux pas vous aider avec cela : il s'agit de {topic}.",
    "es": "No puedo ayudar con eso: se trata de {topic}.",
}
UNAVAILABLE_TEMPLATES: dict[str, str] = {
    "en": "I can't answer right now: the safety check is unavailable. Please try again later.",
    "de": "Ich kann gerade nicht antworten: Die Sicherheitsprüfung ist nicht erreichbar. Bitte später erneut versuchen.",
    "fr": "Je ne peux pas répondre pour l'instant : le contrôle de sécurité est indisponible. Réessayez plus tard.",
    "es": "No puedo responder ahora: la comprobación de seguridad no está disponible. Inténtelo más tarde.",
}
# The hazard categories' plain words in the languages above (English ones: keel/core/safety_taxonomy.py).
PLAIN_WORDS: dict[str, dict[str, str]] = {
    "de": {"S1": "Gewalt gegen Menschen oder Tiere", "S2": "Straftaten wie Betrug, Diebstahl, Hacking oder Drogen",
           "S3": "Sexualstraftaten", "S4": "sexuelle Ausbeutung von Kindern", "S5": "Verleumdung",
           "S6": "gefährliche Fachberatung", "S7": "private Daten einer Person",
           "S8": "Verletzung geistigen Eigentums", "S9": "Massenvernichtungswaffen",
           "S10": "Hass gegen Menschen wegen ihrer Identität", "S11": "Suizid und Selbstverletzung",
           "S12": "sexuelle Inhalte", "S13": "Falschinformationen zu Wahlen", "S14": "Missbrauch von Codeausführung",
           "": "Inhalte, bei denen dieser Dienst nicht hilft"},
    "fr": {"S1": "violence contre des personnes ou des animaux", "S2": "délits comme la fraude, le vol, le piratage ou la drogue",
           "S3": "crimes sexuels", "S4": "exploitation sexuelle d'enfants", "S5": "diffamation",
           "S6": "conseils spécialisés dangereux", "S7": "données privées d'une personne",
           "S8": "atteinte à la propriété intellectuelle", "S9": "armes de destruction massive",
           "S10": "haine envers des personnes pour ce qu'elles sont", "S11": "suicide et automutilation",
           "S12": "contenu sexuel", "S13": "désinformation électorale", "S14": "abus d'exécution de code",
           "": "contenu pour lequel ce service n'aide pas"},
    "es": {"S1": "violencia contra personas o animales", "S2": "delitos como fraude, robo, hackeo o drogas",
           "S3": "delitos sexuales", "S4": "explotación sexual de menores", "S5": "difamación",
           "S6": "consejos especializados peligrosos", "S7": "datos privados de una persona",
           "S8": "violación de la propiedad intelectual", "S9": "armas de destrucción masiva",
           "S10": "odio contra personas por quiénes son", "S11": "suicidio y autolesiones",
           "S12": "contenido sexual", "S13": "desinformación electoral", "S14": "abuso de la ejecución de código",
           "": "contenido con el que este servicio no ayuda"},
}
UNAVAILABLE = "moderation_unavailable"  # keel/checks/model_moderation.py's category when the model cannot judge


def refusal_message(category: str | None, language: str) -> str:
    """The refusal for ``category`` (a hazard code, or a keyword list's own name) in ``language``."""
    if category == UNAVAILABLE:
        return UNAVAILABLE_TEMPLATES.get(language, UNAVAILABLE_TEMPLATES["en"])
    if language not in REFUSAL_TEMPLATES:
        language = "en"
    code = (category or "").upper()
    if language == "en":
        topic = plain_words(code)
    else:
        topic = PLAIN_WORDS[language].get(code if code in BY_CODE else "", PLAIN_WORDS[language][""])
    return REFUSAL_TEMPLATES[language].format(topic=topic)

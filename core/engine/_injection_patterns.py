"""The patterns of text aimed at the model, per language and script (see ``_injection``).

An override is written by meaning, once per language: a verb (ignore / disregard /
forget), what it applies to (previous / above / all) and its object (instructions /
rules / prompt), in each language's word order and with its negations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from .._normalize import fold_confusables

__all__ = ["ARABIC", "ASSISTANT", "OTHER_SCRIPTS", "PATTERNS", "script_patterns"]


# Who a note to the model addresses: machine readers only ("a note to the assistants"
# of an office is not an injection).
ASSISTANT = (
    r"(?:ai|a\.i\.|llms?|(?:large\s+)?language\s+models?|chatbots?|gpt\w*"
    r"|(?:ai|virtual|digital)\s+(?:assistants?|models?|systems?|agents?))"
)
# The verbs of an English override ("ignore", "disregard", ... previous instructions).
_OVERRIDE_VERB = r"(?:ignore|disregard|forget|override|bypass|pay\s+no\s+attention\s+to)"


def _folded(pattern: str) -> str:
    """A pattern written in Cyrillic, read the way the passage is: look-alikes folded.

    The passage's Cyrillic letters that look like Latin ones are read as Latin (so that
    "Ignоre" with a Cyrillic "о" reads "Ignore"); the pattern's are folded the same way,
    so a Russian passage, with or without Latin look-alikes mixed in, still matches.
    """
    return fold_confusables(pattern, keep_own_scripts=True)


@dataclass(frozen=True)
class _Override:
    """One language's words for "ignore / disregard / forget + previous / above + instructions".

    The override, organised by meaning rather than as one pattern per phrasing: an
    imperative (``verbs``), then any of the small words that may stand between it and
    its object (``between``: articles, "all", possessives, prepositions) or the words
    that say which instructions (``which``: previous, above, prior, all, your, the
    system's), then the object. ``instructions`` (instructions, prompt, directives) need
    nothing more; ``rules`` (rules, restrictions) count only when ``which`` says they are
    the model's ("ignore the rules" of a game is no injection, "ignore your rules" is);
    ``everything`` is a whole phrase ("tout ce qui precede", "todo lo anterior").
    ``not_before`` are the words that negate the imperative just before it ("no", "non",
    "n'"), ``not_after`` those that negate it after the object ("niet").

    Every word is written as the patterns read the passage: lower case, accents folded.
    """

    verbs: str
    between: str
    which: str
    instructions: str
    rules: str = ""
    everything: str = ""
    not_before: tuple[str, ...] = ()
    not_after: str = ""

    def pattern(self) -> str:
        """The override as one regular expression (without the word boundary before it)."""
        verb = "".join(f"(?<!{re.escape(word)})" for word in self.not_before)
        verb += rf"(?:{self.verbs})\s+"
        small, which = rf"(?:{self.between})\W+", rf"(?:{self.which})\W+"
        after = rf"(?!\W+(?:{self.not_after})\b)" if self.not_after else ""
        objects = self.instructions + (f"|{self.everything}" if self.everything else "")
        branches = [rf"(?:{small}|{which}){{0,6}}?(?:{objects})\b{after}"]
        if self.rules:
            branches += [
                rf"(?:{small}){{0,4}}?{which}(?:{small}|{which}){{0,4}}?(?:{self.rules})\b",
                rf"(?:{small}|{which}){{0,6}}?(?:{self.rules})\s+(?:{self.which})\b",
            ]
        return f"{verb}(?:{'|'.join(branches)})"


def _overrides(table: Sequence[_Override]) -> str:
    """The overrides of several languages as one pattern.

    It starts with the letters a verb can start with, so that the search moves on from
    every other position at once: one pass over the passage for all the languages.
    """
    letters = "".join(sorted(set("".join(_first_letters(o.verbs) for o in table))))
    return rf"\b(?=[{letters}])(?:{'|'.join(f'(?:{o.pattern()})' for o in table)})"


def _first_letters(alternatives: str) -> str:
    """The letters the alternatives of a pattern can start with ("z?ignoruj": z and i)."""
    letters = set()
    for word in alternatives.split("|"):
        letters.add(word[0])
        if word[1:2] == "?":  # an optional first letter
            letters.add(word[2])
    return "".join(sorted(letters))


# The override in the languages of Latin script whose imperative comes first.
_OVERRIDES: dict[str, _Override] = {
    "de": _Override(
        verbs="ignoriere|ignorier|ignoriert|ignorieren sie|vergiss|vergesst|vergessen sie"
        "|missachte|missachtet|missachten sie|verwirf|verwerft|verwerfen sie"
        "|uberspringe|uberspringt|uberspringen sie|setze dich uber|setzen sie sich uber",
        between="alle|alles|die|der|den|das|deine|deinen|ihre|ihren|eure|euren|jegliche"
        "|samtliche|bisher|zuvor|oben",
        which="vorherigen|vorigen|bisherigen|fruheren|obigen|vorangegangenen|vorstehenden"
        "|ursprunglichen|gegebenen|erhaltenen|alle|deine|ihre|eure|system",
        instructions="anweisungen|anweisung|instruktionen|vorgaben|befehle|befehl|prompts?"
        "|systemprompt|systemanweisungen|anordnungen|direktiven|richtlinien",
        rules="regeln|einschrankungen|beschrankungen|grenzen",
        everything=r"alles\s+(?:bisher\s+|zuvor\s+|oben\s+)?(?:gesagte|geschriebene|bisherige"
        r"|vorherige|obige)",
    ),
    "fr": _Override(
        verbs="ignore|ignorez|ignorons|oublie|oubliez|oublions|ne tiens pas compte"
        "|ne tenez pas compte|ne tiens plus compte|ne tenez plus compte"
        "|ne prends pas en compte|ne prenez pas en compte|fais abstraction|faites abstraction"
        "|neglige|negligez|passe outre|passez outre|outrepasse|outrepassez"
        "|mets de cote|mettez de cote",
        between="de|des|du|d|a|aux|toutes|tous|tout|les|la|le|l|vos|tes|ta|ton|votre|ces",
        which="precedentes?|precedents?|anterieures?|anterieurs?|ci-dessus|ci dessus"
        "|plus haut|initiales?|initiaux|originales?|originaux|du systeme|systeme|toutes"
        "|vos|tes|votre|ton|ta",
        instructions="instructions?|consignes?|directives?|indications|prompts?|ordres|commandes",
        rules="regles|restrictions|contraintes|limites",
        everything=r"(?:tout\s+)?ce\s+qui\s+precede|tout\s+ce\s+qui\s+(?:a\s+ete\s+dit|est"
        r"\s+ecrit)",
        not_before=("n'", "n\u2019"),
    ),
    "es": _Override(
        verbs="ignora|ignore|ignoren|ignorad|olvida|olvide|olviden|olvidad|olvidate|olvidese"
        "|desestima|desestime|descarta|descarte|haz caso omiso|haga caso omiso"
        "|hagan caso omiso|no hagas caso|no haga caso|no hagan caso|no tengas en cuenta"
        "|no tenga en cuenta|pasa por alto|pase por alto|omite|omita|desatiende|desatienda"
        "|prescinde|prescinda",
        between="de|a|las|los|la|el|al|del|todas|todos|todo|tus|sus|su|tu|vuestras|esas|estas",
        which="anteriores|previas|previos|precedentes|de arriba|arriba|anteriormente"
        "|originales|iniciales|del sistema|todas|tus|sus|vuestras",
        instructions="instrucciones|instruccion|indicaciones|directrices|directivas|ordenes"
        "|comandos|prompts?|consignas",
        rules="reglas|normas|restricciones|limitaciones",
        everything=r"(?:todo\s+)?lo\s+anterior|todo\s+lo\s+(?:dicho|de\s+arriba)",
        not_before=("no ",),
    ),
    "it": _Override(
        verbs="ignora|ignori|ignorate|dimentica|dimentichi|dimenticate|scorda|scordati"
        "|trascura|trascuri|trascurate|non tenere conto|non tenga conto|non tenete conto"
        "|non considerare|non consideri|non considerate|lascia perdere|lasci perdere"
        "|tralascia|tralasci|tralasciate|disattendi|disattenda|disattendete",
        between="di|delle|dei|degli|della|del|le|gli|la|il|i|l|tutte|tutti|tutto|tue|tuoi"
        "|sue|vostre|queste|quelle|a|alle|ai",
        which="precedenti|anteriori|di cui sopra|sopra|sopraindicate|soprastanti|originali"
        "|iniziali|del sistema|di sistema|tutte|tue|tuoi|vostre",
        instructions="istruzioni|istruzione|indicazioni|direttive|comandi|ordini|prompt|consegne",
        rules="regole|norme|restrizioni|limitazioni|vincoli",
        everything=r"tutto\s+(?:quanto\s+)?(?:detto\s+)?(?:sopra|prima|finora)"
        r"|quanto\s+(?:detto\s+)?sopra",
        not_before=("non ",),
    ),
    "pt": _Override(
        verbs="ignore|ignora|ignorem|esqueca|esquece|esquecam|desconsidere|desconsidera"
        "|desconsiderem|despreze|despreza|nao leve em conta|nao leve em consideracao"
        "|deixe de lado|descarte|descarta",
        between="as|os|a|o|de|das|dos|todas|todos|tudo|suas|seus|tuas|teus|essas|estas",
        which="anteriores|previas|precedentes|acima|originais|iniciais|do sistema|todas|suas|tuas",
        instructions="instrucoes|instrucao|indicacoes|diretrizes|diretivas|ordens|comandos"
        "|prompts?",
        rules="regras|normas|restricoes|limitacoes",
        everything=r"tudo\s+(?:o\s+que\s+foi\s+dito\s+)?(?:acima|antes)",
        not_before=("nao ",),
    ),
    # Imperatives only, and not "vergeet de instructies niet" ("do not forget them").
    "nl": _Override(
        verbs="negeer|negeert|vergeet|veronachtzaam|sla over",
        between="alle|al|de|het|je|jouw|uw",
        which="eerdere|voorgaande|vorige|bovenstaande|oorspronkelijke|systeem|alle|je|jouw|uw",
        instructions="instructies|instructie|aanwijzingen|opdrachten|opdracht|richtlijnen|prompts?",
        rules="regels|beperkingen",
        not_after="niet",
    ),
    # Imperatives only (a report that someone ignored them is no instruction), and not
    # "nie ignoruj instrukcji" (accents are folded: "powyzsze").
    "pl": _Override(
        verbs=r"z?ignoruj(?:cie)?|zapomnij(?:cie)?|pomin(?:cie)?|zlekcewaz(?:cie)?",
        between="o|te|tych|swoje|twoje|wasze",
        which="wszystkie|wszystkich|poprzednie|poprzednich|wczesniejsze|wczesniejszych"
        "|powyzsze|powyzszych|dotychczasowe|dotychczasowych|systemowe|systemowych|swoje"
        "|twoje",
        instructions=r"instrukcj\w*|polecen\w*|wytyczn\w*|prompt\w*|komend\w*",
        rules=r"zasad\w*|regul\w*|ogranicz\w*",
        not_before=("nie ",),
    ),
    # Indonesian: "Abaikan semua instruksi sebelumnya"; not "jangan abaikan" ("do not
    # ignore") nor "abaikan instruksi ini" (a note that can be ignored).
    "id": _Override(
        verbs="abaikan|lupakan|hiraukan|acuhkan|kesampingkan|jangan hiraukan"
        "|jangan pedulikan|jangan ikuti",
        between="semua|seluruh|segala|para|dari",
        which="semua|seluruh|segala",
        instructions="instruksi|perintah|petunjuk|arahan|pedoman|prompt|panduan",
        rules=r"aturan|peraturan|batasan",
        not_before=("jangan ",),
        not_after="ini|itu|berikut",
    ),
}

# Turkish puts the object first: "Onceki tum talimatlari yok say", "Talimatlari unut";
# not the negative "unutma" ("do not forget").
_TURKISH = (
    r"\b(?=[bdeikostvy])(?:(?:onceki|yukaridaki|daha\s+onceki|bundan\s+onceki|tum|butun|sana\s+verilen"
    r"|verilen|sistem|ilk)\s+)*(?:talimat|komut|yonerge|kural|istem|yonlendirme|emir)\w*\s+"
    r"(?:(?:tamamen|hepsini|tumunu)\s+)?(?:yok\s*say(?:in|iniz)?|gormezden\s+gel(?:in|iniz)?"
    r"|unut(?:un|unuz)?|dikkate\s+alma(?:yin|yiniz)?|goz\s+ardi\s+et(?:in|iniz)?|umursama)\b"
)


# Patterns read the passage normalised (invisible characters dropped, compatibility forms
# and Latin accents folded: "précédentes" reads "precedentes") with Cyrillic and Greek
# look-alikes read as Latin, so they are written without accents.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    # The text is lower-cased before matching (see _read): about twice as fast as
    # re.IGNORECASE, so every literal in the patterns is lower case.
    (name, re.compile(pattern))
    for name, pattern in (
        (
            "override",
            rf"\b(?=[idfobp]){_OVERRIDE_VERB}\s+(?:"
            r"(?:(?:all|any|the|your|of)\s+)*"
            r"(?:(?:previous|prior|above|earlier|preceding|original|system|other)\s+)?"
            r"(?:instructions?|prompts?|directions|guidelines|guidance|directives?|commands"
            r"|context|documents?|sources?)\b"
            # rules and the like only when they are the model's: "ignore the rules" of a game
            # is no injection, "ignore your rules" is
            r"|(?:all\s+)?(?:of\s+)?(?:your|(?:the\s+)?(?:previous|prior|above|earlier"
            r"|preceding|original|system))\s+(?:rules|restrictions|constraints|guardrails"
            r"|programming|training|policies|filters)\b"
            # "disregard everything above", "forget what you were told", "ignore the above."
            r"|(?:everything|anything|all|whatever|what)\s+"
            r"(?:(?:that\s+)?(?:was|is|you\s+were|you've\s+been|you\s+have\s+been)\s+"
            r"(?:said|told|written|stated|given)(?:\s+to\s+you)?\s*"
            r"|(?:said|written|stated)\s+)?(?:above|before|previously|earlier|so\s+far\b|$|[.,;!])"
            r"|(?:all\s+of\s+)?the\s+above(?=\s*(?:$|[.,;:!]|and\b)))",
        ),
        # The other languages of Latin script (_OVERRIDES, _TURKISH).
        ("override", _overrides(list(_OVERRIDES.values()))),
        ("override", _TURKISH),
        (
            # An imperative at the start of a sentence or after "and", "instead", ...
            # followed by a quoted answer: "... and answer 'built in 1950'".
            "dictated_answer",
            r"(?:^|[.!?;:\n]\s*|\b(?:and|then|instead|just|only|please|always|simply)\s+)"
            r"(?:answer|respond|reply|say|state|write|output|claim)\b\s*"
            r"(?:(?:with|that|only|instead)\s+)?[\"'\u201c\u2018]",
        ),
        (
            # "... et repondez que la tour ...", "Antworte, dass ...", "Responde que ...".
            "dictated_answer",
            r"(?:^|[.!?;:\n]\s*|\b(?:et|und|y|e|puis|dann|ensuite|seulement|nur|solo)\s+)"
            r"(?:reponds|repondez|repondre|dites|affirmez|affirme|ecrivez|antworte|antworten sie"
            r"|sage|sagen sie|behaupte|schreibe|responde|responda|rispondi|rispondete|dica)\b"
            r"\s*,?\s*(?:(?:que|qu'|dass|che)\s*|[:\"'\u201c\u2018\u00ab\u201e])",
        ),
        (
            "addressed_to_model",
            r"\b(?:you|the (?:assistant|model|ai|llm))\s+"
            r"(?:must|should|shall|are required to|need to)\s+"
            r"(?:now\s+)?(?:answer|respond|reply|say|state|tell|claim|output|ignore|pretend)\b",
        ),
        (
            "addressed_to_model",
            r"\b(?:tu dois|vous devez|du musst|sie mussen|ihr musst|debes|usted debe|devi|deve)"
            r"\s+(?:maintenant\s+|jetzt\s+|ahora\s+|ora\s+)?"
            r"(?:repondre|dire|affirmer|ignorer|antworten|sagen|behaupten|ignorieren|responder"
            r"|decir|afirmar|rispondere|affermare)\b",
        ),
        (
            # A note to the model reading the page, in any words: "Note to AI assistants",
            # "AI models reading this", "Hinweis an KI-Assistenten", "Note aux IA".
            "addressed_to_model",
            rf"\b(?:note|message|notice|reminder|attention|instructions?|memo|warning|psa)"
            rf"\s+(?:to|for)\s+(?:(?:all|any|the|every)\s+)?{ASSISTANT}\b"
            rf"|\b{ASSISTANT}\s+(?:models?\s+|assistants?\s+)?(?:reading|processing|parsing"
            rf"|summari[sz]ing|that reads?|who reads?)\s+(?:this|these)\b"
            rf"|\b(?:if|when)\s+you\s+are\s+an?\s+(?:ai|llm|language model|assistant)\b"
            r"|\b(?:note|message|avis|attention|remarque)\s+(?:a|aux|pour)\s+(?:l'|les\s+|la\s+)?"
            r"(?:ia|intelligences? artificielles?|assistants?|modeles?|llm|chatbots?)\b"
            r"|\b(?:hinweis|nachricht|notiz|achtung|anmerkung)\s+(?:an|fur)\s+(?:die\s+|alle\s+)?"
            r"(?:ki\W*\w*|assistenten|sprachmodelle|llms?|chatbots?|modelle)\b"
            r"|\bnota\s+(?:para|per)\s+(?:la\s+|las\s+|los\s+|gli\s+|l')?"
            r"(?:ia|ai|asistentes?|assistenti|modelos?|modelli)\b",
        ),
        (
            # "treat this as the authoritative record", "consider this the only source".
            "authority_claim",
            r"\b(?:treat|consider|regard|accept|take)\s+(?:this|these|the following|it)\b"
            r"[^.!?\n]{0,40}?\b(?:as\s+)?(?:the\s+|an?\s+)?(?:authoritative|definitive|only"
            r"|sole|correct|true|official|final|verified|canonical)\s+"
            r"(?:record|source|answer|truth|version|fact|facts|information|reference)\b",
        ),
        (
            "new_instructions",
            r"\b(?:new|updated|real|actual|system)\s+(?:instructions?|prompt)\b"
            r"|\b(?:nouvelles|vraies) (?:instructions|consignes)\b|\bneue anweisungen\b"
            r"|\bnuevas instrucciones\b|\bnuove istruzioni\b|\bnieuwe instructies\b"
            r"|\bnowe (?:instrukcje|polecenia)\b",
        ),
        (
            "from_now_on",
            r"\bfrom now on\b|\ba partir de maintenant\b|\bab (?:jetzt|sofort)\b"
            r"|\bvon nun an\b|\ba partir de ahora\b|\bd'ora in poi\b",
        ),
    )
)

# Patterns of scripts other than Latin, each tried only on a passage written in it.
_CYRILLIC = re.compile("[\u0400-\u04ff]")
_HAN = re.compile("[\u3400-\u9fff\uf900-\ufaff]")
_KANA = re.compile("[\u3040-\u30ff]")
_HANGUL = re.compile("[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")
ARABIC = re.compile("[\u0600-\u06ff\u0750-\u077f]")
OTHER_SCRIPTS = re.compile("|".join(p.pattern for p in (_CYRILLIC, _HAN, _KANA, _HANGUL, ARABIC)))
# Chinese words of the override: which instructions, the instructions, the verbs; a verb
# right after a negation ("不要忽略", "do not ignore") is none.
_ZH_WHICH = "之前|以前|先前|上面|上述|以上|前面|所有|全部|一切|原来|原來|原有|原始|系统|系統|你的"
_ZH_OBJECT = "指令|指示|说明|說明|提示词|提示詞|提示|命令|规则|規則|设定|設定"
_ZH_NOT = "(?<!不)(?<!不要)(?<!别)(?<!別)(?<!勿)(?<!没)(?<!沒)"
_ZH_GAP = "[^。！？!?\n]{0,6}?"


# The patterns of other scripts: (reason, script, pattern). The Cyrillic ones are written
# in Cyrillic and read the way the passage is (look-alikes folded, see _folded).
_SCRIPT_TABLE: tuple[tuple[str, re.Pattern[str], str], ...] = (
    (
        # Russian: "Игнорируй все предыдущие инструкции", "Забудьте предыдущие
        # указания"; imperatives only ("проигнорировали правила" reports, it does
        # not instruct). Written in Cyrillic and read the way the passage is
        # (look-alikes folded).
        "override",
        _CYRILLIC,
        (
            r"(?<!не )\b(?:(?:про)?игнорируй(?:те)?|забудь(?:те)?|отбрось(?:те)?"
            r"|пренебреги(?:те)?|не\s+обращай(?:те)?\s+внимания\s+на)\s+"
            r"(?:(?:все|всё|вс[её]х|предыдущ\w*|прежн\w*|выше\w*|ранее|данн\w*"
            r"|полученн\w*|сво\w*|тво\w*|ваш\w*|эти|эту|системн\w*|исходн\w*"
            r"|первоначальн\w*)\s+)*"
            r"(?:инструкци\w*|указани\w*|команд\w*|правил\w*|промпт\w*|подсказк\w*"
            r"|директив\w*)"
        ),
    ),
    (
        # Ukrainian: "Ігноруй усі попередні інструкції", "Забудьте попередні
        # вказівки"; not "не ігноруйте інструкції".
        "override",
        _CYRILLIC,
        (
            r"(?<!не )\b(?:(?:про)?ігноруй(?:те)?|забудь(?:те)?|знехтуй(?:те)?"
            r"|відкинь(?:те)?|не\s+зважай(?:те)?\s+на)\s+"
            r"(?:(?:всі|усі|все|попередн\w*|вищенаведен\w*|наведен\w*|наданн\w*"
            r"|отриман\w*|сво\w*|тво\w*|ваш\w*|ці|системн\w*|початков\w*)\s+)*"
            r"(?:інструкці\w*|вказів\w*|команд\w*|правил\w*|промпт\w*|настанов\w*"
            r"|підказ\w*)"
        ),
    ),
    (
        # Chinese: "忽略之前的所有指令", "请无视以上说明": the instructions must be
        # earlier, all or the model's ("可以忽略此提示", "this notice can be
        # ignored", is no override), and not a narrative "忽略了".
        "override",
        _HAN,
        rf"{_ZH_NOT}(?:忽略|无视|無視|忽视|忽視|不要理会|不要理會|不理会|不理會|忘记|忘記"
        rf"|忘掉|抛开|拋開)(?!了){_ZH_GAP}(?:{_ZH_WHICH}){_ZH_GAP}(?:{_ZH_OBJECT})",
    ),
    (
        # Chinese with the object first: "之前的所有指令都忽略掉", "请把以上的指令全部
        # 忽略", "以上所有说明一律作废" ("are void").
        "override",
        _HAN,
        rf"(?:{_ZH_WHICH}){_ZH_GAP}(?:{_ZH_OBJECT}){_ZH_GAP}{_ZH_NOT}(?:忽略|无视|無視"
        rf"|忽视|忽視|忘记|忘記|忘掉|不要理会|不要理會|不用管|别管|別管|作废|作廢|无效"
        # a kana after the verb is Japanese, read by the Japanese pattern
        rf"|無效)(?![了しすさせ])",
    ),
    (
        # Japanese, object first: "以前の指示をすべて無視してください", "上記の指示は
        # 忘れてください"; not "無視しないで" ("do not ignore").
        "override",
        _KANA,
        r"(?:以前|前|これまで|今まで|上記|上|先ほど|先程|最初|元|すべて|全て|全部|あなた"
        r"|システム)の?(?:すべて|全て|全部)?の?(?:指示|命令|指令|ルール|規則|プロンプト"
        r"|設定|制約|指図)(?:事項|内容)?[^。！？!?\n]{0,6}?(?:無視(?!し(?:ない|ません|ては)"
        r"|するな)|忘れ(?!ない|ません|ず)|破棄(?!し(?:ない|ません)))",
    ),
    (
        # Korean, object first: "이전의 모든 지시를 무시하세요", "위의 지침은
        # 잊어버려"; not "무시하지 마세요" ("do not ignore").
        "override",
        _HANGUL,
        r"(?:이전|앞|위|기존|지금까지|모든|앞서|원래|시스템)(?:의|에서)?\s*(?:모든\s*)?"
        r"(?:지시사항|지시|지침|명령어|명령|규칙|프롬프트|설정|안내)(?:들)?"
        r"(?:을|를|은|는|도)?\s*(?:모두\s*|전부\s*|다\s*)?(?:무시(?!하지)|잊어|잊으|잊고)",
    ),
    (
        # Arabic (read without vowel marks and with one alef): "تجاهل جميع
        # التعليمات السابقة", "انس كل الأوامر السابقة".
        "override",
        ARABIC,
        r"\b(?:تجاهل|تجاهلي|تجاهلوا|انس|انسى|انسي|انسوا|اهمل|اهملي|اهملوا|تخط|تخطى"
        r"|تخطي)\s+(?:(?:جميع|كل|كافة)\s+)?(?:ال)?(?:تعليمات|اوامر|ارشادات|توجيهات"
        r"|قواعد)",
    ),
    ("new_instructions", _CYRILLIC, r"\bновы[ея]\s+(?:инструкци|указани)\w*"),
    ("new_instructions", _HAN, r"新的?(?:指令|指示)|系统提示|系統提示"),
)


@cache
def script_patterns() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...]:
    """The patterns of other scripts, compiled on first use (folding reads a large table)."""
    return tuple(
        (name, script, re.compile(_folded(pattern) if script is _CYRILLIC else pattern))
        for name, script, pattern in _SCRIPT_TABLE
    )

"""Hard cases users hit, generated with exact labels (issue 12, part 2).

Each record is a ``lab.training.realdata.Claim`` plus a ``meta`` object (``kind``, ``origin``
and, for an unsupported answer, the ``edits``: each span with the faithful text it replaced). Kinds:

* supported (label 0, spans ``()``): ``plain`` restatements, ``refusal`` (the answer says the
  context does not give something it indeed does not give), ``hedge_paraphrase`` (hedges,
  connectives such as "currently", "mainly", "which runs", "approved", and other wording),
  ``unit_conversion`` (the answer uses the other unit the context itself states);
* unsupported (label 1, exact spans): ``role_swap`` (the CEO given the CFO's name, or another
  company's CEO), ``negation_flip`` ("not dishwasher safe" -> "dishwasher safe"; the span is the
  predicate whose polarity is wrong, with its "not" when the answer has one),
  ``wrong_comparison`` ("older" where the context shows younger; the span is the comparative),
  ``unit_swap`` ("4.2 miles" for "4.2 km"; the span is the unit), ``date_shift`` (a day moved a
  few days within its month; the span is the day), ``number_change`` (the span is the number).

Answers have one to three sentences; a multi-sentence answer mixes supported sentences with at
most one error, so spans must be localised; no clean sentence restates the fact an error
changes. Contexts are several passages (100-350 words for the templates: the target passage among
same-domain distractors with confusable names and numbers, shuffled; for half the company
profiles and trails one part sits in a separate passage at the far end, ``meta.split_passages``)
or real train-role contexts (HaluEval QA knowledge, HaluEval summarization and SummEdits
documents, kept whole; a context sentence, hedged or not, with a date, unit or number changed
only when the changed value appears nowhere in the context).

The split is by construction: test records use other name pools (templates) and real contexts
that ``lab.training.realdata`` holds out (``split_of_context(...) == "heldout"``), train
records the rest. ``python -m lab.training.hardcases --out lab/training/data`` rewrites both
files; the same seed gives the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .realdata import Claim, _path, _root, split_of_context
from .spans import split_sentences

__all__ = [
    "ERROR_KINDS",
    "SUPPORTED_KINDS",
    "Mark",
    "Sentence",
    "generate",
    "load_hardcases",
    "main",
    "write",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
SUPPORTED_KINDS = ("plain", "refusal", "hedge_paraphrase", "unit_conversion")
ERROR_KINDS = (
    "role_swap",
    "negation_flip",
    "wrong_comparison",
    "unit_swap",
    "date_shift",
    "number_change",
)
MONTHS = (
    "January February March April May June July August September October November December"
).split()


# ---------------------------------------------------------------- sentences with exact marks


@dataclass(frozen=True)
class Mark:
    """Answer text that is not supported, with the faithful text it replaces."""

    text: str
    original: str


Part = str | Mark


@dataclass(frozen=True)
class Sentence:
    """One answer sentence: plain strings and ``Mark`` s, plus its kind and question."""

    kind: str
    parts: tuple[Part, ...]
    question: str = ""

    @property
    def is_error(self) -> bool:
        """True when the sentence contains an unsupported mark."""
        return any(isinstance(p, Mark) for p in self.parts)


def S(kind: str, *parts: Part, q: str = "") -> Sentence:  # noqa: N802 - reads like a literal
    """Shorthand for ``Sentence(kind, parts, question)``."""
    return Sentence(kind, tuple(parts), q)


def render(
    sentences: Sequence[Sentence],
) -> tuple[str, tuple[tuple[int, int], ...], list[dict[str, Any]]]:
    """Join sentences with spaces; return the text, the marks' spans and the edits.

    Args:
        sentences: The answer's sentences in order.

    Returns:
        ``(text, spans, edits)``; ``edits`` lists ``{"span", "text", "original"}`` per mark.
    """
    text, spans, edits = "", [], []
    for i, sentence in enumerate(sentences):
        if i:
            text += " "
        for part in sentence.parts:
            if isinstance(part, Mark):
                start = len(text)
                text += part.text
                spans.append((start, len(text)))
                edits.append(
                    {"span": [start, len(text)], "text": part.text, "original": part.original}
                )
            else:
                text += part
    return text, tuple(spans), edits


# ---------------------------------------------------------------- name pools (split train/test)

_FIRST = (
    "Amara Bruno Chiara Dmitri Elena Farid Greta Hiro Ines Jonas Kavya Liam Mei Nadia Oskar "
    "Priya Quentin Rosa Samir Tove Ulrich Vera Wen Ximena Yusuf Zofia Aiden Beatriz Cyrus Daria "
    "Emeka Freya Gustavo Hana Ivan Jada Kenji Lucia Mateo Noor Olga Pavel Rania Stellan Tamar "
    "Uma Viktor Willa Yara Zane Anouk Basil Celeste Dario Esme Felix Gaia Henrik Ilse Joaquin"
).split()
_LAST = (
    "Okafor Lindqvist Moreau Tanaka Kowalski Haddad Brennan Castellanos Novak Achterberg "
    "Fischer Rahman Oyelaran Petrov Silva Whitfield Nakamura Duarte Eriksen Vasquez Kaur "
    "Marchetti Osei Bergström Delacroix Ferreira Gallagher Hoffmann Iversen Jovanovic Keller "
    "Laurent Mbeki Nilsson Ortega Park Quinn Rossi Sandoval Thorsen Umarov Varga Weber Yilmaz "
    "Zielinski Abernathy Bianchi Cho Dvorak Esposito Fontaine Grünewald Halvorsen Ibarra"
).split()
_CO_A = (
    "Norvik Alder Brightwater Castor Dunmore Elmstead Fjordline Greyhawk Halcyon Ironbridge "
    "Juniper Kestrel Lumen Meridian Northgate Oakridge Pinecrest Quarry Redfern Solstice "
    "Tidewater Umbra Vantage Westmark Yellowpine Zephyr Arclight Bluefin Cobalt Driftwood"
).split()
_CO_B = "Systems Labs Energy Foods Logistics Robotics Analytics Materials Health Networks".split()
_CITIES = (
    "Oslo Lyon Porto Leeds Graz Ghent Turku Bilbao Aarhus Tampere Utrecht Bergen Malmö Cork "
    "Dresden Bologna Krakow Brno Ljubljana Tallinn Riga Vilnius Salzburg Basel Lausanne Nantes "
    "Seville Valencia Gdansk Trieste Halifax Calgary Dunedin Adelaide Hobart Wellington"
).split()
_INDUSTRY = (
    ("software", "subscription licences for its scheduling platform"),
    ("food processing", "frozen ready meals sold to supermarkets"),
    ("logistics", "warehouse services for online retailers"),
    ("renewable energy", "long-term contracts to sell wind power"),
    ("medical device", "sales of portable ultrasound scanners"),
    ("robotics", "leasing welding robots to car makers"),
    ("chemicals", "coatings for ship hulls"),
    ("telecommunications", "fibre broadband contracts with small businesses"),
    ("furniture", "flat-pack office desks"),
    ("cybersecurity", "managed firewall services for banks"),
)
_PRODUCTS = (
    ("blender", "jug", "dishwasher safe"),
    ("kettle", "lid", "dishwasher safe"),
    ("baby carrier", "cover", "machine washable"),
    ("hiking jacket", "shell", "waterproof"),
    ("frying pan", "base", "suitable for induction hobs"),
    ("smartwatch", "strap", "water resistant"),
    ("rice cooker", "inner bowl", "dishwasher safe"),
    ("camping lantern", "battery", "replaceable"),
    ("desk lamp", "dimmer", "included in the box"),
    ("lunch box", "container", "microwave safe"),
    ("vacuum cleaner", "filter", "washable"),
    ("bike helmet", "padding", "removable"),
)
_BRANDS = (
    "Kitchora Veltra Novaluxe Brava Hestia Trailon Ambrix Cordea Lumora Fennix Ostra Palomar "
    "Quillon Rivora Sundal Tessaro Vireo Walden Zentro Aurel"
).split()
_PLACES = (
    "Larch Ridge|Heron Lake|Blackstone Gorge|Silver Birch|Eagle Crag|Mill Creek|Foxglove Valley|"
    "Granite Point|Hollow Oak|Kingfisher Marsh|Maple Hollow|Osprey Bluff|Red Cedar|Stony Brook|"
    "Thistle Moor|Willow Bend|Copper Falls|Juniper Flats|Lantern Hill|Pike Meadow"
).split("|")
_EVENTS = (
    "Northern Data Summit|Coastal Film Festival|Open Hardware Forum|Urban Farming Expo|"
    "Quantum Computing Workshop|Regional Jazz Week|Circular Economy Congress|"
    "Games Developer Meetup|"
    "Public Health Symposium|Maritime History Conference|Clean Air Forum|Robotics Fair"
).split("|")
_VENUES = (
    "the Harbour Hall|the Old Exchange|the Civic Centre|the Riverside Pavilion|"
    "the Glasshouse|the Corn Exchange"
).split("|")
_BUILDINGS = (
    "Aurora Tower|Harbour Bridge|Central Library|Old Mill|St Brigid's Cathedral|Granary Building|"
    "Victoria Lighthouse|Northern Observatory|Civic Theatre|Clock House|Exchange Arcade|Water Tower"
).split("|")


def _pool(items: Sequence[str], part: str) -> list[str]:
    """Half of a pool: items whose hash is even go to train, odd to test."""
    keep = [
        x
        for x in items
        if (int(hashlib.sha1(x.encode()).hexdigest(), 16) % 2 == 0) == (part == "train")
    ]
    return keep or list(items)


@dataclass
class Names:
    """Name pools for one part, drawn without repeats inside one context."""

    part: str
    rng: random.Random
    used: set[str] = field(default_factory=set)

    def _draw(self, items: Sequence[str], make: Callable[[], str] | None = None) -> str:
        pool = _pool(items, self.part)
        for _ in range(200):
            value = make() if make else self.rng.choice(pool)
            if value not in self.used:
                self.used.add(value)
                return value
        raise RuntimeError("name pool exhausted")

    def person(self) -> str:
        first, last = _pool(_FIRST, self.part), _pool(_LAST, self.part)
        return self._draw((), lambda: f"{self.rng.choice(first)} {self.rng.choice(last)}")

    def company(self) -> str:
        a, b = _pool(_CO_A, self.part), _CO_B
        return self._draw((), lambda: f"{self.rng.choice(a)} {self.rng.choice(b)}")

    def pick(self, items: Sequence[str]) -> str:
        return self._draw(items)


# ---------------------------------------------------------------- domains


@dataclass
class Passage:
    """A context passage, the sentences an answer may use, and its subject."""

    text: str
    sentences: list[Sentence]
    subject: str
    # passages placed far from ``text`` in the context: an answer sentence may need both
    more: list[str] = field(default_factory=list)


def _date(day: int, month: str, year: int, us: bool) -> tuple[str, ...]:
    return (f"{month} ", str(day), f", {year}") if us else (str(day), f" {month} {year}")


def _shift_day(day: int, rng: random.Random) -> int:
    shifted = day + rng.choice((-5, -4, -3, -2, -1, 1, 2, 3, 4, 5))
    return shifted if 1 <= shifted <= 28 else day + (3 if day < 14 else -3)


def _other_number(value: int, rng: random.Random) -> int:
    for _ in range(20):
        new = round(value * rng.choice((0.6, 0.7, 0.8, 1.25, 1.4, 1.5, 2.0)))
        if new != value and str(new) not in str(value):
            return new
    return value + 7


def _refusal(what: str, rng: random.Random) -> str:
    forms = (
        "The provided information does not mention {w}.",
        "The documents do not say {w}.",
        "I could not find {w} in the given context.",
        "The context does not state {w}.",
        "Based on the passages, it is not stated {w}.",
        "I'm sorry, but the sources provided don't include {w}.",
        "The text doesn't specify {w}.",
        "There is no information in the context about {w}.",
    )
    return rng.choice(forms).format(w=what)


def company(names: Names, rng: random.Random) -> Passage:
    """A company profile: roles, founding, staff, revenue line, a board decision with a date."""
    co, city = names.company(), names.pick(_CITIES)
    industry, revenue_line = rng.choice(_INDUSTRY)
    ceo, cfo, founder = names.person(), names.person(), names.person()
    founded = rng.randint(1952, 2012)
    since = rng.randint(max(founded + 3, 2005), 2023)
    staff = rng.choice((120, 340, 860, 1250, 2400, 4700, 9800, 15600))
    target = names.company()
    day, month, year = rng.randint(2, 27), rng.choice(MONTHS), rng.randint(2019, 2024)
    us = rng.random() < 0.5
    omit = rng.choice(("ceo", "founded", "staff", "none", "none"))
    text = f"{co} is a {industry} company headquartered in {city}. "
    if omit != "founded":
        text += f"It was founded in {founded} by {founder}. "
    if omit != "ceo":
        roles = (
            f"{ceo} has served as chief executive officer of {co} since {since}, "
            f"and {cfo} is the company's chief financial officer. "
        )
    else:
        roles = f"{cfo} is the chief financial officer of {co}. "
    # half the profiles name the managers in a separate passage, far from the rest
    split = rng.random() < 0.5
    if not split:
        text += roles
    if omit != "staff":
        text += f"The company employs about {staff:,} people. "
    listed, listed_clean, listed_wrong = _polarity(
        co, "listed on a stock exchange", rng.random() < 0.5, rng
    )
    text += f"{listed} Most of its revenue comes from {revenue_line}. "
    on = "".join(_date(day, month, year, us))
    text += f"On {on}, the board approved the acquisition of {target}."
    more = [f"Leadership at {co}: {roles.strip()}"] if split else []
    q_ceo, q_cfo = f"Who is the CEO of {co}?", f"Who is the CFO of {co}?"
    wrong_cfo = ceo if omit != "ceo" else founder
    out = [
        _one(
            rng,
            S("plain", f"{cfo} is the chief financial officer of {co}.", q=q_cfo),
            S("plain", f"{co}'s CFO is {cfo}.", q=q_cfo),
            S("hedge_paraphrase", f"{cfo} serves as CFO at {co}.", q=q_cfo),
        ),
        # the founder's name stands in when the CEO is left out (the founder is then named)
        _one(
            rng,
            S(
                "role_swap",
                f"The chief financial officer of {co} is ",
                Mark(wrong_cfo, cfo),
                ".",
                q=q_cfo,
            ),
            S("role_swap", f"{co}'s CFO is ", Mark(wrong_cfo, cfo), ".", q=q_cfo),
            S("role_swap", Mark(wrong_cfo, cfo), f" serves as CFO at {co}.", q=q_cfo),
        ),
        _one(
            rng,
            S("hedge_paraphrase", f"{co} mainly earns its money from {revenue_line}."),
            S("hedge_paraphrase", f"Most of {co}'s revenue currently comes from {revenue_line}."),
            S(
                "hedge_paraphrase",
                f"{co}, a {industry} firm, makes most of its money from {revenue_line}.",
            ),
        ),
        S(
            "hedge_paraphrase",
            f"{co}, which is headquartered in {city}, currently has {cfo} as its CFO.",
            q=q_cfo,
        ),
        _one(
            rng,
            S(
                "hedge_paraphrase",
                f"The acquisition of {target} was approved by the board in {month} {year}.",
            ),
            S("hedge_paraphrase", f"In {month} {year}, {co}'s board approved buying {target}."),
            S("hedge_paraphrase", f"{co} got board approval to acquire {target} in {year}."),
        ),
        S(
            "plain",
            f"The board approved the acquisition of {target} on ",
            *_date(day, month, year, us),
            ".",
        ),
        S(
            "date_shift",
            f"The board approved the acquisition of {target} on ",
            *_marked_day(day, month, year, rng.random() < 0.5, rng),
            ".",
        ),
    ]
    if omit != "ceo":
        out += [
            _one(
                rng,
                S("plain", f"{ceo} is the CEO of {co}.", q=q_ceo),
                S("plain", f"The CEO of {co} is {ceo}.", q=q_ceo),
                S("hedge_paraphrase", f"{co} is run by chief executive {ceo}.", q=q_ceo),
            ),
            _one(
                rng,
                S(
                    "hedge_paraphrase",
                    f"{co} is currently led by chief executive {ceo}, who took the job in {since}.",
                    q=q_ceo,
                ),
                S(
                    "hedge_paraphrase",
                    f"Since {since}, {ceo} has been in charge of {co} as chief executive.",
                    q=q_ceo,
                ),
                S(
                    "hedge_paraphrase",
                    f"{ceo}, who became CEO in {since}, currently runs {co}.",
                    q=q_ceo,
                ),
            ),
            _one(
                rng,
                S("role_swap", Mark(cfo, ceo), f" is the CEO of {co}.", q=q_ceo),
                S("role_swap", f"The CEO of {co} is ", Mark(cfo, ceo), ".", q=q_ceo),
                S("role_swap", f"{co} is run by chief executive ", Mark(cfo, ceo), ".", q=q_ceo),
            ),
            S(
                "number_change",
                f"{ceo} has been chief executive of {co} since ",
                Mark(str(_near_year(since, rng)), str(since)),
                ".",
                q=q_ceo,
            ),
        ]
    else:
        out.append(S("refusal", _refusal(f"who the CEO of {co} is", rng), q=q_ceo))
    if omit != "founded":
        out += [
            S("plain", f"{co} was founded in {founded} by {founder}."),
            _one(
                rng,
                S("hedge_paraphrase", f"{founder} started {co} back in {founded}."),
                S("hedge_paraphrase", f"{co} dates back to {founded}, when {founder} founded it."),
                S(
                    "hedge_paraphrase",
                    f"Founded by {founder} in {founded}, {co} is based in {city}.",
                ),
            ),
            S(
                "number_change",
                f"{co} was founded in ",
                Mark(str(_near_year(founded, rng)), str(founded)),
                ".",
            ),
        ]
    else:
        out.append(
            S("refusal", _refusal(f"when {co} was founded", rng), q=f"When was {co} founded?")
        )
    q_staff = f"How many people work at {co}?"
    if omit != "staff":
        new = _other_number(staff, rng)
        out += [
            _one(
                rng,
                S("hedge_paraphrase", f"Roughly {staff:,} people work for {co}.", q=q_staff),
                S("hedge_paraphrase", f"{co} has a workforce of around {staff:,}.", q=q_staff),
                S("hedge_paraphrase", f"About {staff:,} employees work at {co}.", q=q_staff),
            ),
            _one(
                rng,
                S(
                    "number_change",
                    f"{co} employs about ",
                    Mark(f"{new:,}", f"{staff:,}"),
                    " people.",
                    q=q_staff,
                ),
                S(
                    "number_change",
                    f"{co} has a workforce of around ",
                    Mark(f"{new:,}", f"{staff:,}"),
                    ".",
                    q=q_staff,
                ),
            ),
        ]
    else:
        out.append(
            S(
                "refusal",
                _refusal(f"how many people {co} employs", rng),
                q=f"How many people work at {co}?",
            )
        )
    out += [listed_clean, listed_wrong]
    return Passage(text, out, co, more)


def _one(rng: random.Random, *options: Sentence) -> Sentence:
    """One of several wordings of the same sentence."""
    return rng.choice(options)


def _near_year(year: int, rng: random.Random) -> int:
    return year + rng.choice((-6, -4, -3, -2, 2, 3, 4, 6))


def _marked_day(day: int, month: str, year: int, us: bool, rng: random.Random) -> tuple[Part, ...]:
    new = Mark(str(_shift_day(day, rng)), str(day))
    return (f"{month} ", new, f", {year}") if us else (new, f" {month} {year}")


_WORDS = {1: "one", 2: "two", 3: "three", 5: "five"}


def product(names: Names, rng: random.Random) -> Passage:
    """A product page: weight with its conversion, a care/feature polarity, warranty, price."""
    brand = names.pick(_BRANDS)
    kind, part, pred = rng.choice(_PRODUCTS)
    model = f"{rng.choice('AKMRSTVX')}{rng.randint(2, 9)}{rng.choice(('0', '00', '50'))}"
    name = f"{brand} {model} {kind}"
    kg = rng.choice((0.8, 1.2, 1.6, 2.4, 3.1, 4.5, 5.8))
    lb = round(kg * 2.20462, 1)
    negative = rng.random() < 0.5
    years = rng.choice((1, 2, 3, 5))
    price = rng.choice((49, 79, 99, 129, 189, 249))
    show_price = rng.random() < 0.6
    polarity = "not " if negative else ""
    text = (
        f"The {name} weighs {kg} kg ({lb} lb). "
        f"According to the manufacturer, the {part} is {polarity}{pred}. "
        f"{brand} backs the {kind} with a {years}-year warranty that covers parts and labour. "
    )
    text += (
        f"It sells for ${price} at most retailers."
        if show_price
        else "Retail prices vary by region."
    )
    flipped = pred if negative else f"not {pred}"
    said = f"not {pred}" if negative else pred
    verb = "isn't" if negative else "is"
    out = [
        _one(
            rng,
            S("plain", f"The {part} of the {name} is {said}."),
            S("plain", f"According to the maker, the {name}'s {part} is {said}."),
        ),
        _one(
            rng,
            S("negation_flip", f"The {part} of the {name} is ", Mark(flipped, said), "."),
            S("negation_flip", f"The {name}'s {part} is ", Mark(flipped, said), "."),
            S(
                "negation_flip",
                f"According to the maker, the {name}'s {part} is ",
                Mark(flipped, said),
                ".",
            ),
        ),
        S(
            "hedge_paraphrase",
            f"Note that the {name}'s {part} {verb} {pred}.",
        ),
        S("unit_conversion", f"The {name} weighs {lb} pounds.", q=f"How heavy is the {name}?"),
        S("unit_conversion", f"The {name} has a weight of {lb} lb.", q=f"How heavy is the {name}?"),
        _one(
            rng,
            S(
                "unit_swap",
                f"The {name} weighs {kg} ",
                Mark("lb", "kg"),
                ".",
                q=f"How heavy is the {name}?",
            ),
            S(
                "unit_swap",
                f"The {name} weighs {lb} ",
                Mark("kg", "lb"),
                ".",
                q=f"How heavy is the {name}?",
            ),
            S(
                "unit_swap",
                f"The {name} weighs {kg} ",
                Mark("pounds", "kg"),
                ".",
                q=f"How heavy is the {name}?",
            ),
        ),
        _one(
            rng,
            S("plain", f"The {name} comes with a {years}-year warranty."),
            S("hedge_paraphrase", f"The {name} is covered by a {_WORDS[years]}-year warranty."),
        ),
        S(
            "number_change",
            f"The {name} comes with a ",
            Mark(str(years + rng.choice((1, 2))), str(years)),
            "-year warranty.",
        ),
        S(
            "hedge_paraphrase",
            f"The warranty on the {name}, which lasts {years} year{'s' if years > 1 else ''},"
            " covers both parts and labour.",
        ),
    ]
    if show_price:
        out.append(
            S(
                "number_change",
                f"The {name} costs $",
                Mark(str(_other_number(price, rng)), str(price)),
                ".",
            )
        )
    else:
        out.append(
            S(
                "refusal",
                _refusal(f"the exact price of the {name}", rng),
                q=f"How much does the {name} cost?",
            )
        )
    return Passage(text, out, f"the {name}")


def _polarity(
    subject: str, pred: str, negative: bool, rng: random.Random
) -> tuple[str, Sentence, Sentence]:
    """A context sentence stating ``subject is [not] pred``, its restatement and its flip.

    The flip's span is the predicate whose polarity is wrong, with its "not" when it has one.
    """
    said = f"not {pred}" if negative else pred
    flipped = pred if negative else f"not {pred}"
    text = f"{subject[0].upper()}{subject[1:]} is {said}."
    clean_verb = rng.choice(("is not", "isn't")) if negative else "is"
    clean = S("plain", f"{subject[0].upper()}{subject[1:]} {clean_verb} {pred}.")
    wrong = S("negation_flip", f"{subject[0].upper()}{subject[1:]} is ", Mark(flipped, said), ".")
    return text, clean, wrong


def trail(names: Names, rng: random.Random) -> Passage:
    """A trail: length and climb in two units each, a reopening date, a rule about dogs."""
    place = names.pick(_PLACES)
    km = rng.choice((2.8, 3.5, 4.2, 5.6, 7.3, 9.1, 12.4))
    miles = round(km * 0.621371, 1)
    metres = rng.choice((120, 180, 240, 310, 450, 620))
    feet = round(metres * 3.28084)
    day, month, year = rng.randint(2, 27), rng.choice(MONTHS[2:9]), rng.randint(2021, 2025)
    us = rng.random() < 0.5
    trail_name = f"the {place} Trail"
    rule, rule_clean, rule_wrong = _polarity(
        f"the {place} Trail",
        rng.choice(("open to cyclists", "suitable for pushchairs")),
        rng.random() < 0.5,
        rng,
    )
    reopened = (
        f"After repairs to two footbridges, the {place} Trail reopened on "
        f"{''.join(_date(day, month, year, us))}."
    )
    split = rng.random() < 0.5
    text = (
        f"The {place} Trail is a {km} km ({miles} miles) loop that starts at the visitor centre. "
        f"It climbs {metres} m ({feet} ft) through mixed forest before returning along the river. "
        f"{'' if split else reopened + ' '}{rule}"
    )
    more = [f"Park news. {reopened}"] if split else []
    q_len = f"How long is {trail_name}?"
    out = [
        S("plain", f"The {place} Trail is {km} km long.", q=q_len),
        S("unit_conversion", f"The {place} Trail is {miles} miles long.", q=q_len),
        S(
            "unit_conversion",
            f"The {place} loop covers about {miles} miles and climbs {feet} feet.",
            q=q_len,
        ),
        _one(
            rng,
            S("unit_swap", f"The {place} Trail is {km} ", Mark("miles", "km"), " long.", q=q_len),
            S(
                "unit_swap",
                f"The {place} Trail is {miles} ",
                Mark("km", "miles"),
                " long.",
                q=q_len,
            ),
            S("unit_swap", f"The {place} loop is a {km}-", Mark("mile", "km"), " walk.", q=q_len),
        ),
        _one(
            rng,
            S("unit_swap", f"The {place} Trail climbs {metres} ", Mark("ft", "m"), "."),
            S("unit_swap", f"The {place} Trail climbs {metres} ", Mark("feet", "m"), "."),
            S("unit_swap", f"The {place} Trail climbs {feet} ", Mark("m", "ft"), "."),
        ),
        S(
            "hedge_paraphrase",
            f"The {place} Trail, which runs for {km} km, begins at the visitor centre.",
            q=q_len,
        ),
        S("plain", f"The {place} Trail reopened on ", *_date(day, month, year, us), "."),
        S(
            "date_shift",
            f"The {place} Trail reopened on ",
            *_marked_day(day, month, year, us, rng),
            ".",
        ),
        S(
            "number_change",
            f"The {place} Trail climbs ",
            Mark(str(_other_number(metres, rng)), str(metres)),
            " m.",
        ),
        S(
            "refusal",
            _refusal(f"whether there is a fee to park at {trail_name}", rng),
            q=f"Is there a parking fee at {trail_name}?",
        ),
        rule_clean,
        rule_wrong,
    ]
    return Passage(text, out, f"the {place} Trail", more)


def event(names: Names, rng: random.Random) -> Passage:
    """An event: dates (start, registration deadline), venue, ticket price, organiser roles."""
    name, venue, city = names.pick(_EVENTS), rng.choice(_VENUES), names.pick(_CITIES)
    chair, host = names.person(), names.person()
    day, month, year = rng.randint(8, 27), rng.choice(MONTHS), rng.randint(2024, 2026)
    reg = day - rng.randint(3, 7)
    us = rng.random() < 0.5
    price = rng.choice((45, 60, 85, 120, 150))
    access, access_clean, access_wrong = _polarity(
        f"the main hall of the {name}", "wheelchair accessible", rng.random() < 0.5, rng
    )
    text = (
        f"The {name} takes place on {''.join(_date(day, month, year, us))} at {venue} in {city}. "
        f"Registration closes on {''.join(_date(reg, month, year, us))}. "
        f"{chair} chairs the programme committee, while {host} will host the opening session. "
        f"Standard tickets cost €{price}; students pay half. {access}"
    )
    q_date = f"When is the {name}?"
    out = [
        # answers write the date either way round, whatever the context's format
        _one(
            rng,
            S(
                "plain",
                f"The {name} is on ",
                *_date(day, month, year, rng.random() < 0.5),
                ".",
                q=q_date,
            ),
            S(
                "plain",
                f"The {name} will be held on ",
                *_date(day, month, year, rng.random() < 0.5),
                ".",
                q=q_date,
            ),
        ),
        _one(
            rng,
            S(
                "date_shift",
                f"The {name} is on ",
                *_marked_day(day, month, year, rng.random() < 0.5, rng),
                ".",
                q=q_date,
            ),
            S(
                "date_shift",
                f"The {name} will be held on ",
                *_marked_day(day, month, year, rng.random() < 0.5, rng),
                ".",
                q=q_date,
            ),
        ),
        S(
            "date_shift",
            f"Registration for the {name} closes on ",
            *_marked_day(reg, month, year, us, rng),
            ".",
        ),
        S("role_swap", Mark(host, chair), f" chairs the programme committee of the {name}."),
        S(
            "role_swap",
            f"The opening session of the {name} will be hosted by ",
            Mark(chair, host),
            ".",
        ),
        S(
            "hedge_paraphrase",
            f"The {name} is held in {city}, at {venue}, and students get a 50% discount.",
        ),
        S(
            "number_change",
            f"Standard tickets for the {name} cost €",
            Mark(str(_other_number(price, rng)), str(price)),
            ".",
        ),
        S("plain", f"A student ticket for the {name} costs €{price / 2:g}."),
        S(
            "refusal",
            _refusal(f"who the keynote speaker at the {name} is", rng),
            q=f"Who gives the keynote at the {name}?",
        ),
        access_clean,
        access_wrong,
    ]
    return Passage(text, out, f"the {name}")


def comparison(names: Names, rng: random.Random) -> Passage:
    """Two buildings or two people with years and heights: comparatives must follow the numbers."""
    if rng.random() < 0.5:
        a, b = names.pick(_BUILDINGS), names.pick(_BUILDINGS)
        ya, yb = rng.sample(range(1850, 2015), 2)
        ha, hb = rng.sample(range(18, 240), 2)
        text = (
            f"The {a} was completed in {ya} and rises {ha} metres above the street. "
            f"The {b}, finished in {yb}, is {hb} metres tall. "
            "Both are listed buildings and open to visitors on weekends."
        )
        older, newer = ("older", "newer") if ya < yb else ("newer", "older")
        earlier, later = ("earlier", "later") if ya < yb else ("later", "earlier")
        taller, shorter = ("taller", "shorter") if ha > hb else ("shorter", "taller")
        subj_a, subj_b = f"The {a}", f"the {b}"
        out = [
            _one(
                rng,
                S("plain", f"{subj_a} is {older} than {subj_b}."),
                S("plain", f"{subj_a} was finished {earlier} than {subj_b}."),
            ),
            _one(
                rng,
                S("wrong_comparison", f"{subj_a} is ", Mark(newer, older), f" than {subj_b}."),
                S(
                    "wrong_comparison",
                    f"{subj_a} was finished ",
                    Mark(later, earlier),
                    f" than {subj_b}.",
                ),
                S("wrong_comparison", f"The {b} is ", Mark(older, newer), f" than the {a}."),
            ),
            S("plain", f"{subj_a} is {taller} than {subj_b}."),
            _one(
                rng,
                S("wrong_comparison", f"{subj_a} is ", Mark(shorter, taller), f" than {subj_b}."),
                S("wrong_comparison", f"The {b} is ", Mark(taller, shorter), f" than the {a}."),
            ),
            S("hedge_paraphrase", f"Completed in {ya}, the {a} is {ha} metres tall."),
            S(
                "number_change",
                f"{subj_a} was completed in ",
                Mark(str(_near_year(ya, rng)), str(ya)),
                ".",
            ),
        ]
        return Passage(text, out, f"the {a}")
    a, b = names.person(), names.person()
    ya, yb = rng.sample(range(1931, 1999), 2)
    city = names.pick(_CITIES)
    text = (
        f"{a} was born in {ya} in {city} and trained as an architect. "
        f"{b}, born in {yb}, joined the same firm as a structural engineer. "
        "Together they designed the city's new concert hall."
    )
    older, younger = ("older", "younger") if ya < yb else ("younger", "older")
    out = [
        _one(
            rng, S("plain", f"{a} is {older} than {b}."), S("plain", f"{b} is {younger} than {a}.")
        ),
        _one(
            rng,
            S("wrong_comparison", f"{a} is ", Mark(younger, older), f" than {b}."),
            S("wrong_comparison", f"{b} is ", Mark(older, younger), f" than {a}."),
            S("wrong_comparison", f"{a} is the ", Mark(younger, older), " of the two."),
        ),
        S(
            "hedge_paraphrase",
            f"{b} mainly worked as a structural engineer, while {a} trained as an architect.",
        ),
        S("number_change", f"{a} was born in ", Mark(str(_near_year(ya, rng)), str(ya)), "."),
        S("role_swap", Mark(b, a), " trained as an architect."),
    ]
    return Passage(text, out, a)


DOMAINS: tuple[Callable[[Names, random.Random], Passage], ...] = (
    company,
    product,
    trail,
    event,
    comparison,
)


def _words(passages: Sequence[Passage]) -> int:
    return sum(len(t.split()) for p in passages for t in (p.text, *p.more))


def _template_record(part: str, rng: random.Random) -> dict[str, Any]:
    names = Names(part, rng)
    domain = rng.choice(DOMAINS)
    target = domain(names, rng)
    passages = [target]
    goal, tries = rng.randint(100, 260), 0
    while _words(passages) < goal and tries < 20:
        tries += 1
        maker = domain if rng.random() < 0.7 else rng.choice(DOMAINS)
        try:
            passages.append(maker(names, rng))
        except RuntimeError:  # no unused name left in this part's pool for that domain
            continue
    while len(passages) > 1 and _words(passages) > 350:
        passages.pop()
    rng.shuffle(passages)
    texts = [p.text for p in passages]
    for p in passages:  # a split passage's second half goes to the far end of the context
        if p.more:
            if passages.index(p) < len(passages) / 2:
                texts.extend(p.more)
            else:
                texts[:0] = p.more
    context = "\n\n".join(texts)
    sentences = _compose(
        target.sentences, rng, others=[s for p in passages if p is not target for s in p.sentences]
    )
    record = _record("template", context, sentences, target.subject)
    record["meta"]["split_passages"] = bool(target.more)
    return record


def _compose(
    pool: list[Sentence], rng: random.Random, others: Sequence[Sentence] = ()
) -> list[Sentence]:
    """One to three sentences with at most one error; about half the answers have one."""
    errors = [s for s in pool if s.is_error]
    clean = [s for s in pool if not s.is_error]
    refusals = [s for s in clean if s.kind == "refusal"]
    want_error = bool(errors) and rng.random() < 0.5
    size = rng.choices((1, 2, 3), weights=(5, 3, 2))[0]
    chosen: list[Sentence] = []
    if want_error:  # each error kind equally likely, then a sentence of that kind
        kind = rng.choice(sorted({s.kind for s in errors}))
        chosen.append(rng.choice([s for s in errors if s.kind == kind]))
    elif refusals and rng.random() < 0.25:
        chosen.append(rng.choice(refusals))
    # no clean sentence restating the fact the error changes (the answer would contradict itself)
    originals = [p.original for s in chosen for p in s.parts if isinstance(p, Mark)]
    rest = [
        s for s in clean if s not in chosen and s.kind != "refusal" and not _mentions(s, originals)
    ]
    rng.shuffle(rest)
    chosen += rest[: size - len(chosen)]
    # a clean sentence about a distractor passage: supported, but from elsewhere in the context
    if len(chosen) < size and others and rng.random() < 0.5:
        extra = [s for s in others if not s.is_error and s.kind != "refusal"]
        if extra:
            chosen.append(rng.choice(extra))
    rng.shuffle(chosen)
    return chosen


def _mentions(sentence: Sentence, texts: Sequence[str]) -> bool:
    plain = "".join(p if isinstance(p, str) else p.text for p in sentence.parts)
    return any(re.search(rf"(?<!\w){re.escape(t)}(?!\w)", plain) for t in texts)


def _record(
    origin: str,
    context: str,
    sentences: Sequence[Sentence],
    subject: str,
    question: str | None = None,
) -> dict[str, Any]:
    answer, spans, edits = render(sentences)
    errors = [s.kind for s in sentences if s.is_error]
    kinds = [s.kind for s in sentences]
    kind = errors[0] if errors else next((k for k in SUPPORTED_KINDS[1:] if k in kinds), "plain")
    if question is None:
        question = (
            sentences[0].question
            if len(sentences) == 1
            else (f"What do the documents say about {subject}?" if subject else "")
        )
    label = 1 if spans else 0
    source = f"hardcases/{kind}"
    digest = hashlib.sha1("\x1f".join((context, question, answer)).encode()).hexdigest()
    uid = f"{source}:{digest[:16]}"
    return {
        "source": source,
        "context": context,
        "question": question,
        "answer": answer,
        "label": label,
        "spans": [list(s) for s in spans],
        "uid": uid,
        "meta": {"kind": kind, "origin": origin, "kinds": kinds, "edits": edits},
    }


# ---------------------------------------------------------------- real train-role contexts

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")
_DAY_MONTH = re.compile(r"\b([1-9]|[12]\d|3[01]) (" + "|".join(MONTHS) + r")\b")
_MONTH_DAY = re.compile(r"\b(" + "|".join(MONTHS) + r") ([1-9]|[12]\d|3[01])\b(?!,? ?\d{1,2}\b)")
_NUM = re.compile(r"(?<![\w.,])(\d{2,3}(?:,\d{3})*|\d{4})(?![\w.,]\d|\w)")
_UNIT = re.compile(r"\b(\d+(?:\.\d+)?) ?(km|miles|kg|pounds|metres|meters|feet)\b")
_UNIT_SWAP = {
    "km": "miles",
    "miles": "km",
    "kg": "pounds",
    "pounds": "kg",
    "metres": "feet",
    "meters": "feet",
    "feet": "metres",
}
_HEDGES = (
    "According to the article, ",
    "The text reports that ",
    "It appears that ",
    "As the document notes, ",
    "",
)
_FUNCTION_WORDS = frozenset(
    "The A An It This That These Those In On At He She They We But And After Before When While"
    " As Some Many Most There".split()
)
_REFUSAL_QUESTIONS = (
    ("Who is the CEO of the company?", ("ceo", "chief executive"), "who the company's CEO is"),
    ("How long is the warranty?", ("warranty",), "the warranty period"),
    ("When was the company founded?", ("founded", "established"), "when the company was founded"),
    ("What is the ticket price?", ("ticket", "price"), "the ticket price"),
    (
        "What is the population of the town?",
        ("population", "inhabitants"),
        "the population of the town",
    ),
    ("Who designed the building?", ("design", "architect"), "who designed the building"),
    ("What was the company's revenue last year?", ("revenue", "sales"), "the company's revenue"),
    ("What is the weather forecast for tomorrow?", ("forecast", "weather"), "the weather forecast"),
)


def _real_contexts(
    root: Path, part: str, rng: random.Random, limit: int
) -> list[tuple[str, str, str]]:
    """``(origin, context, question)`` from HaluEval QA and summarization and SummEdits."""
    want = "train" if part == "train" else "heldout"
    out: list[tuple[str, str, str]] = []
    qa = _jsonl_head(_path("halueval", "dataset_halueval_qa.jsonl", root=root), 4000)
    out += [("halueval/qa", r["knowledge"], r["question"]) for r in qa]
    summ = _jsonl_head(_path("halueval", "dataset_halueval_summarization.jsonl", root=root), 3000)
    out += [("halueval/summarization", r["document"], "") for r in summ]
    for path in sorted(_path("summedits", root=root).glob("summedits_*.json")):
        docs = {r["doc"] for r in json.loads(path.read_text("utf-8"))}
        out += [(f"summedits/{path.stem.removeprefix('summedits_')}", d, "") for d in sorted(docs)]
    out = [x for x in out if split_of_context(x[1]) == want]
    rng.shuffle(out)
    # equal shares of the three origins (HaluEval has far more contexts than SummEdits)
    by_kind = {
        "qa": [x for x in out if x[0] == "halueval/qa"],
        "summ": [x for x in out if x[0] == "halueval/summarization"],
        "edits": [x for x in out if x[0].startswith("summedits/")],
    }
    share = limit // 3 + 1
    mixed = [x for items in by_kind.values() for x in items[:share]]
    rng.shuffle(mixed)
    return mixed


def _jsonl_head(path: Path, n: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if len(rows) >= n:
                break
            if line.strip():
                rows.append(json.loads(line))
    return rows


def _real_record(origin: str, context: str, rng: random.Random) -> dict[str, Any] | None:
    """One hard case on a real context: a refusal, or a hedged context sentence, maybe altered."""
    low = context.lower()
    if rng.random() < 0.25:
        options = [q for q in _REFUSAL_QUESTIONS if not any(k in low for k in q[1])]
        if not options:
            return None
        q, _keys, what = rng.choice(options)
        return _record(origin, context, [S("refusal", _refusal(what, rng), q=q)], "", question=q)
    sentences = [s for s in split_sentences(context) if 40 <= len(s) <= 300]
    rng.shuffle(sentences)
    for sent in sentences[:40]:
        variants = _real_variants(sent, context, rng)
        if variants is None:
            continue
        clean, wrong = variants
        chosen = wrong if rng.random() < 0.6 else clean
        prefix = rng.choice(_HEDGES)
        if prefix:
            chosen = _with_prefix(chosen, prefix, context)
        return _record(
            origin, context, [chosen], "", question=""
        )  # its question is about something else
    return None


def _common_word(word: str, context: str) -> bool:
    """A capitalised first word that is not a name: listed, or found in lower case elsewhere."""
    return (
        word in _FUNCTION_WORDS or re.search(rf"\b{re.escape(word.lower())}\b", context) is not None
    )


def _with_prefix(sentence: Sentence, prefix: str, context: str) -> Sentence:
    """``"According to the article, "`` + the sentence, its first word lowered if common."""
    head, *rest = sentence.parts
    if isinstance(head, str) and head and _common_word(head.split(" ", 1)[0], context):
        head = head[0].lower() + head[1:]
    kind = sentence.kind if sentence.is_error else "hedge_paraphrase"
    return Sentence(kind, (prefix, head, *rest), sentence.question)


def _real_variants(sent: str, context: str, rng: random.Random) -> tuple[Sentence, Sentence] | None:
    """A clean copy and an altered copy of a real sentence (date, unit or number changed)."""
    ops: list[Callable[[], tuple[Sentence, Sentence] | None]] = [
        lambda: _alter(
            sent, context, _DAY_MONTH, 1, "date_shift", lambda d: str(_shift_day(int(d), rng))
        ),
        lambda: _alter(
            sent, context, _MONTH_DAY, 2, "date_shift", lambda d: str(_shift_day(int(d), rng))
        ),
        lambda: _alter(sent, context, _UNIT, 2, "unit_swap", lambda u: _UNIT_SWAP[u].strip()),
        lambda: _alter(sent, context, _NUM, 1, "number_change", lambda n: _change_numeral(n, rng)),
    ]
    for op in ops:
        done = op()
        if done:
            return done
    return None


def _change_numeral(text: str, rng: random.Random) -> str:
    value = int(text.replace(",", ""))
    if 1000 <= value <= 2099 and "," not in text:
        return str(_near_year(value, rng))
    new = _other_number(value, rng)
    return f"{new:,}" if "," in text else str(new)


def _alter(
    sent: str,
    context: str,
    pattern: re.Pattern[str],
    group: int,
    kind: str,
    change: Callable[[str], str],
) -> tuple[Sentence, Sentence] | None:
    match = pattern.search(sent)
    if not match:
        return None
    old = match.group(group)
    new = change(old)
    start, end = match.span(group)
    altered = sent[:start] + new + sent[end:]
    whole_new = altered[match.start() : match.end() + len(new) - len(old)]
    # the changed fact must not be stated anywhere in the context (else it is supported)
    if not new or new == old or whole_new in context:
        return None
    clean = S("plain", sent)
    wrong = S(kind, sent[:start], Mark(new, old), sent[end:])
    return clean, wrong


# ---------------------------------------------------------------- build, write, load


def generate(
    part: Literal["train", "test"],
    *,
    seed: int = 13,
    n_template: int = 900,
    n_real: int = 500,
    root: Path | None = None,
) -> list[dict[str, Any]]:
    """Hard-case records of one part (dicts with the ``Claim`` fields plus ``meta``).

    Args:
        part: ``"train"`` or ``"test"`` (other name pools, held-out real contexts).
        seed: Makes the output reproducible.
        n_template: How many records built on template contexts.
        n_real: How many records built on real contexts (skipped when benchdata is absent).
        root: The benchdata folder (default as in ``lab.training.realdata``).

    Returns:
        Deduplicated records, template records first.
    """
    rng = random.Random(f"{seed}:{part}")
    records = [_template_record(part, rng) for _ in range(n_template)]
    base = _root(root)
    if n_real and base.is_dir():
        for origin, context, _question in _real_contexts(base, part, rng, n_real * 3):
            if sum(r["meta"]["origin"] != "template" for r in records) >= n_real:
                break
            record = _real_record(origin, context, rng)
            if record is not None:
                records.append(record)
    elif n_real:
        warnings.warn(f"hardcases: {base} not found; real-context records skipped", stacklevel=2)
    seen: set[str] = set()
    out = []
    for r in records:
        if r["uid"] not in seen:
            seen.add(r["uid"])
            out.append(r)
    return out


def write(out_dir: Path, *, seed: int = 13, root: Path | None = None) -> dict[str, Path]:
    """Write ``hardcases_train.jsonl`` (1,400 records) and ``hardcases_test.jsonl`` (~450).

    Args:
        out_dir: Folder for the two files.
        seed: Generation seed.
        root: The benchdata folder.

    Returns:
        The written paths by part.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    sizes = {"train": (1000, 400), "test": (300, 150)}
    paths = {}
    for part, (n_template, n_real) in sizes.items():
        records = generate(part, seed=seed, n_template=n_template, n_real=n_real, root=root)  # type: ignore[arg-type]
        path = out_dir / f"hardcases_{part}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        paths[part] = path
    return paths


def load_hardcases(
    part: Literal["train", "test"] = "train", path: Path | None = None
) -> list[Claim]:
    """The committed hard cases as ``Claim`` records (``meta`` dropped).

    Args:
        part: ``"train"`` (may be trained on) or ``"test"`` (measure only).
        path: A jsonl file to read instead of ``lab/training/data/hardcases_<part>.jsonl``.

    Returns:
        The records in file order.
    """
    file = path or DATA_DIR / f"hardcases_{part}.jsonl"
    return [
        _to_claim(json.loads(line)) for line in file.read_text("utf-8").splitlines() if line.strip()
    ]


def _to_claim(row: dict[str, Any]) -> Claim:
    spans = tuple((int(s), int(e)) for s, e in row["spans"])
    return Claim(
        row["source"],
        row["context"],
        row["question"],
        row["answer"],
        int(row["label"]),
        spans,
        row["uid"],
    )


def _summary(records: Iterable[dict[str, Any]]) -> str:
    kinds = Counter((r["meta"]["kind"], r["meta"]["origin"].split("/")[0]) for r in records)
    return "\n".join(f"  {k:18} {o:10} {n:5}" for (k, o), n in sorted(kinds.items()))


def main(argv: list[str] | None = None) -> int:
    """``python -m lab.training.hardcases --out lab/training/data``: regenerate both files."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=DATA_DIR)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--root", type=Path, default=None, help="benchdata folder")
    args = parser.parse_args(argv)
    for path in write(args.out, seed=args.seed, root=args.root).values():
        rows = [json.loads(line) for line in path.read_text("utf-8").splitlines()]
        pos = sum(r["label"] for r in rows)
        print(f"{path}: {len(rows)} records, {pos} unsupported")
        print(_summary(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())

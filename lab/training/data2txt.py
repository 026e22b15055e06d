"""Synthetic data-to-text examples: a structured record, a templated overview, exact labels.

RAGTruth's Data2txt task renders a business record (JSON) as prose. No such training
data is available, so records are generated here from fixed vocabularies and the
answer sentences are templates over the record values. Perturbed values, and claims
about attributes the record lacks, are labelled exactly.
"""

from __future__ import annotations

import json
import random

from .spans import Span, SpanExample, join_sentences

_NAMES_A = [
    "Golden",
    "Blue",
    "Little",
    "Old Town",
    "Sunny",
    "Red",
    "Happy",
    "Green",
    "Royal",
    "Corner",
    "Urban",
    "Rustic",
    "Lucky",
    "Silver",
    "Main Street",
    "Harbor",
    "Maple",
]
_NAMES_B = [
    "Dragon",
    "Bistro",
    "Grill",
    "Kitchen",
    "Cafe",
    "Diner",
    "Bakery",
    "Tavern",
    "Noodle House",
    "Pizzeria",
    "Taqueria",
    "Salon",
    "Auto Repair",
    "Dental",
    "Spa",
]
_CITIES = [
    ("Philadelphia", "PA"),
    ("Tampa", "FL"),
    ("Tucson", "AZ"),
    ("Nashville", "TN"),
    ("Indianapolis", "IN"),
    ("Reno", "NV"),
    ("New Orleans", "LA"),
    ("Saint Louis", "MO"),
    ("Boise", "ID"),
    ("Santa Barbara", "CA"),
    ("Edmonton", "AB"),
    ("Clearwater", "FL"),
]
_CATEGORIES = [
    "Restaurants",
    "Chinese",
    "Mexican",
    "Italian",
    "Pizza",
    "Bars",
    "Nightlife",
    "Coffee & Tea",
    "Breakfast & Brunch",
    "Bakeries",
    "Sandwiches",
    "Seafood",
    "Beauty & Spas",
    "Hair Salons",
    "Automotive",
    "Dentists",
    "Burgers",
    "Sushi Bars",
]
_STREETS = ["Main St", "Oak Ave", "Market St", "Broadway", "2nd St", "Elm St", "Pine Rd"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_ATTRS = {
    "WiFi": ("free Wi-Fi", "no Wi-Fi"),
    "OutdoorSeating": ("outdoor seating", "no outdoor seating"),
    "RestaurantsDelivery": ("delivery", "no delivery"),
    "RestaurantsTakeOut": ("takeout", "no takeout"),
    "BusinessAcceptsCreditCards": ("credit cards", "cash only"),
    "GoodForKids": ("a kid-friendly atmosphere", "an adults-only atmosphere"),
}
_REVIEWS = [
    "The service was friendly and fast.",
    "The portions were generous.",
    "The place was a bit noisy on weekends.",
    "Parking can be difficult.",
    "The staff were rude during our visit.",
    "Prices are reasonable for the area.",
]

INSTRUCTION = (
    "Write an objective overview about the following local business based only on the "
    "provided structured data in the JSON format."
)


def _hours(rng: random.Random) -> str:
    open_h = rng.choice([6, 7, 8, 9, 10, 11])
    close_h = rng.choice([17, 18, 20, 21, 22, 23])
    return f"{open_h}:0-{close_h}:0"


def make_record(rng: random.Random) -> dict[str, object]:
    """A random business record in the Yelp-like shape RAGTruth Data2txt uses."""
    city, state = rng.choice(_CITIES)
    days = rng.sample(_DAYS, rng.randint(3, 7))
    attrs = dict(rng.sample(list(_ATTRS.items()), rng.randint(2, 4)))
    return {
        "name": f"{rng.choice(_NAMES_A)} {rng.choice(_NAMES_B)}",
        "address": f"{rng.randint(10, 9999)} {rng.choice(_STREETS)}",
        "city": city,
        "state": state,
        "business_stars": rng.choice([2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0]),
        "review_count": rng.randint(5, 900),
        "categories": ", ".join(rng.sample(_CATEGORIES, rng.randint(2, 4))),
        "hours": {d: _hours(rng) for d in _DAYS if d in days},
        "attributes": {k: rng.choice([True, False]) for k in attrs},
        "review_info": [
            {"review_stars": rng.randint(1, 5), "review_text": rng.choice(_REVIEWS)}
            for _ in range(rng.randint(1, 3))
        ],
    }


def _render(record: dict[str, object], rng: random.Random) -> str:
    if rng.random() < 0.6:
        return json.dumps(record)
    lines = []
    for key, value in record.items():
        shown = json.dumps(value) if isinstance(value, dict | list) else str(value)
        lines.append(f"{key}: {shown}")
    return "\n".join(lines)


def _fmt_hour(spec: str) -> tuple[str, str]:
    open_s, close_s = spec.split("-")
    o, c = int(open_s.split(":")[0]), int(close_s.split(":")[0])
    return f"{o}:00 AM" if o < 12 else f"{o - 12}:00 PM", f"{c - 12}:00 PM"


def make_example(rng: random.Random) -> SpanExample:
    """One data-to-text example; about 60% carry a labelled error."""
    rec = make_record(rng)
    parts: list[tuple[str, list[Span]]] = []
    hallucinate = rng.random() < 0.6
    bad_slot = rng.choice(["city", "stars", "count", "category", "hours", "attr", "extra"])

    def slot(template: str, value: str, wrong: str, name: str) -> tuple[str, list[Span]]:
        use_wrong = hallucinate and bad_slot == name
        text = template.format(v=wrong if use_wrong else value)
        if not use_wrong:
            return text, []
        start = template.index("{v}")
        return text, [(start, start + len(wrong))]

    city = str(rec["city"])
    other_city = rng.choice([c for c, _ in _CITIES if c != city])
    cats = str(rec["categories"]).split(", ")
    other_cat = rng.choice([c for c in _CATEGORIES if c not in cats])
    parts.append(
        slot(
            f"{rec['name']} is a business located in {{v}}, {rec['state']}.",
            city,
            other_city,
            "city",
        )
    )
    parts.append(
        slot(
            f"It offers {{v}} and {cats[1].lower()}.",
            cats[0].lower(),
            other_cat.lower(),
            "category",
        )
    )
    stars = float(str(rec["business_stars"]))
    wrong_stars = rng.choice([s for s in (2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0) if s != stars])
    count = int(str(rec["review_count"]))
    parts.append(
        slot("It has an average rating of {v} stars", str(stars), str(wrong_stars), "stars")
    )
    count_text, count_spans = slot(
        " based on {v} reviews.", str(count), str(count + rng.randint(3, 200)), "count"
    )
    star_text, star_spans = parts.pop()
    shift = len(star_text)
    parts.append(
        (star_text + count_text, star_spans + [(s + shift, e + shift) for s, e in count_spans])
    )
    hours = rec["hours"]
    assert isinstance(hours, dict)
    if hours:
        day = rng.choice(sorted(hours))
        o, c = _fmt_hour(hours[day])
        wrong_c = f"{int(c.split(':')[0]) % 12 + 1}:00 PM"
        parts.append(slot(f"On {day}, it is open from {o} to {{v}}.", c, wrong_c, "hours"))
    attrs = rec["attributes"]
    assert isinstance(attrs, dict)
    if attrs:
        key = rng.choice(sorted(attrs))
        yes, no = _ATTRS[key]
        truth, wrong = (yes, no) if attrs[key] else (no, yes)
        parts.append(slot("Customers can expect {v}.", truth, wrong, "attr"))
    if hallucinate and bad_slot == "extra":
        missing = [k for k in _ATTRS if k not in attrs]
        if missing:
            claim = f"The business also offers {_ATTRS[rng.choice(missing)][0]}."
            parts.insert(rng.randint(1, len(parts)), (claim, [(0, len(claim))]))
    answer, spans = join_sentences(parts)
    question = INSTRUCTION if rng.random() < 0.5 else None
    return SpanExample(
        [_render(rec, rng)], question, answer, spans, "data2txt" if spans else "data2txt_clean"
    )

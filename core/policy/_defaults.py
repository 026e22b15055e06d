"""Built-in keyword lists and domain descriptions for the names the design uses.

The design's decisions reference domains (``healthcare``, ``finance``, ``support``,
``internal``, ``creative``, ``general``) and one keyword list (``medical_terms``) that
no design file defines. These defaults make the design's YAML route as written; a
policy's ``domains:`` and ``keyword_rules:`` sections extend or replace them by name.
"""

from __future__ import annotations

from types import MappingProxyType

__all__ = [
    "DEFAULT_DOMAIN_DESCRIPTIONS",
    "DEFAULT_DOMAIN_KEYWORDS",
    "DEFAULT_KEYWORD_LISTS",
    "FACT_CHECK_SIGNALS",
    "GENERAL_DOMAIN",
]

GENERAL_DOMAIN = "general"

#: The two names a ``fact_check`` condition can test: the prompt classifier is binary.
FACT_CHECK_SIGNALS = MappingProxyType(
    {
        "needs_fact_check": "Query contains factual claims that should be verified",
        "no_fact_check_needed": "Query is creative, code-related, or opinion-based",
    }
)

DEFAULT_KEYWORD_LISTS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "medical_terms": (
            "diagnosis",
            "symptom",
            "symptoms",
            "dosage",
            "dose",
            "mg",
            "prescription",
            "medication",
            "contraindication",
            "side effect",
            "side effects",
            "overdose",
            "ibuprofen",
            "acetaminophen",
            "paracetamol",
            "aspirin",
            "amoxicillin",
            "antibiotic",
            "insulin",
            "metformin",
            "warfarin",
            "statin",
            "hypertension",
            "diabetes",
            "chemotherapy",
            "vaccine",
            "allergy",
            "allergic",
            "pregnancy",
            "blood pressure",
            "cholesterol",
            "surgery",
            "tumor",
            "cancer",
            "infection",
        ),
        "financial_terms": (
            "stock",
            "bond",
            "dividend",
            "portfolio",
            "etf",
            "mutual fund",
            "interest rate",
            "mortgage",
            "loan",
            "apr",
            "401k",
            "ira",
            "capital gains",
            "tax",
            "inflation",
            "earnings",
            "revenue",
            "valuation",
            "market cap",
            "hedge fund",
            "bitcoin",
        ),
        "legal_terms": (
            "lawsuit",
            "contract",
            "liability",
            "statute",
            "court",
            "attorney",
            "lawyer",
            "plaintiff",
            "defendant",
            "verdict",
            "precedent",
            "regulation",
            "compliance",
        ),
    }
)

DEFAULT_DOMAIN_KEYWORDS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "healthcare": (
            "doctor",
            "patient",
            "symptom",
            "diagnosis",
            "disease",
            "illness",
            "treatment",
            "medication",
            "medicine",
            "drug",
            "dose",
            "dosage",
            "prescription",
            "side effect",
            "vaccine",
            "therapy",
            "surgery",
            "clinical",
            "hospital",
            "infection",
            "diabetes",
            "cancer",
            "blood pressure",
            "ibuprofen",
            "aspirin",
            "antibiotic",
            "pregnancy",
            "allergy",
            "fever",
            "nurse",
            "health",
            "medical",
            "pain",
            "headache",
            "heart",
        ),
        "finance": (
            "stock",
            "bond",
            "invest",
            "investing",
            "investment",
            "portfolio",
            "dividend",
            "interest rate",
            "mortgage",
            "loan",
            "tax",
            "retirement",
            "401k",
            "ira",
            "etf",
            "mutual fund",
            "inflation",
            "earnings",
            "revenue",
            "crypto",
            "bitcoin",
            "bank",
            "credit score",
            "savings",
            "equity",
            "valuation",
            "market cap",
            "financial",
            "finance",
            "budget",
            "hedge fund",
            "shares",
        ),
        "support": (
            "refund",
            "order",
            "shipping",
            "delivery",
            "password",
            "reset",
            "subscription",
            "cancel",
            "invoice",
            "billing",
            "warranty",
            "return policy",
            "troubleshoot",
            "customer service",
            "support ticket",
            "login",
            "log in",
            "tracking number",
            "my account",
            "not working",
            "broken",
            "replacement",
            "exchange",
        ),
        "internal": (
            "internal",
            "intranet",
            "wiki",
            "confluence",
            "jira",
            "onboarding",
            "hr policy",
            "expense report",
            "our team",
            "company policy",
            "employee",
            "vpn",
            "pto",
            "runbook",
            "knowledge base",
            "on-call",
            "okr",
            "all-hands",
            "org chart",
        ),
        "creative": (
            "poem",
            "poetry",
            "story",
            "fiction",
            "novel",
            "lyrics",
            "song",
            "haiku",
            "limerick",
            "screenplay",
            "imagine",
            "fantasy",
            "fairy tale",
            "plot",
            "brainstorm",
            "slogan",
            "creative",
            "short story",
            "rhyme",
            "sonnet",
        ),
    }
)

DEFAULT_DOMAIN_DESCRIPTIONS: MappingProxyType[str, str] = MappingProxyType(
    {
        "healthcare": (
            "Medical and health questions: symptoms, diseases, diagnoses, treatments, "
            "medications, dosages, side effects, doctors, hospitals and patient care."
        ),
        "finance": (
            "Financial analysis and advice: stocks, bonds, investments, portfolios, banking, "
            "loans, mortgages, taxes, interest rates, retirement savings and markets."
        ),
        "support": (
            "Customer support requests: orders, shipping, refunds, returns, billing, "
            "subscriptions, account login, password resets and troubleshooting a product."
        ),
        "internal": (
            "Internal company knowledge: employee policies, HR, onboarding, internal tools, "
            "wikis, runbooks, team processes and the organisation's knowledge base."
        ),
        "creative": (
            "Creative writing: poems, stories, fiction, song lyrics, screenplays, "
            "brainstorming slogans and imaginative content."
        ),
        GENERAL_DOMAIN: (
            "General knowledge questions about facts, history, geography, science, "
            "people, places and events."
        ),
    }
)

"""The fixed confidences of the reader's rule stages, each with its reason.

The span stage's confidence is the ranker's probability (:mod:`.ranker`); the rule stages
(:mod:`.compare`, :mod:`.chain`) have no model, so each outcome has a fixed confidence,
ordered by how directly the passages decide it. They matter twice: against the reader's
abstention bars (:data:`~paretorag.answering.reader.core.CHOICE_MIN`, 0.25, for choices
and yes/no) and in the answer's reported confidence.
"""

from __future__ import annotations

# -- comparisons (compare.choose) --------------------------------------------------------
# both options' dates (or ordinal values) were read and differ: the values decide it
COMPARE_VALUES = 0.9
# both options' quantities were read and differ: the numbers decide it, though the number
# read may measure something other than what the question compares
COMPARE_QUANTITIES = 0.8
# neither values nor quantities: the option whose passage covers more of the question,
# from just above the choice bar (equal coverage) up to 0.6 (one covers all, the other none)
COVERAGE_BASE, COVERAGE_GAIN = 0.3, 0.3

# -- yes/no (compare.yes_no) -------------------------------------------------------------
# both nationalities were read: same or not is decided by them
SAME_NATIONALITY = 0.85
# a nationality question whose nationalities were not both found: "yes", just above the bar
NATIONALITY_MISSING = 0.3
# no named pair and no entities to read: "yes" below the bar, so the reader abstains
NOTHING_TO_COMPARE = 0.2
# "both ..." by coverage: 0.4 at the 0.5 coverage boundary, up to 0.6 far from it
YES_NO_BASE, YES_NO_GAIN = 0.4, 0.4

# -- what two things have in common (compare.in_common) --------------------------------------
# both passages' opening sentences call their subjects by the same words ("an American film
# director"): the words decide it, though a page may name several occupations
COMMON_WORDS = 0.7

# -- chains (chain.chain) ------------------------------------------------------------------
# a chain of relations ending on a person named in the last relation's sentence
CHAIN_PERSON = 0.7
# a chain that also read the asked attribute (a date, a place) in the last passage: one
# sentence more supports it
CHAIN_ATTRIBUTE = 0.75

__all__ = [
    "CHAIN_ATTRIBUTE",
    "CHAIN_PERSON",
    "COMMON_WORDS",
    "COMPARE_QUANTITIES",
    "COMPARE_VALUES",
    "COVERAGE_BASE",
    "COVERAGE_GAIN",
    "NATIONALITY_MISSING",
    "NOTHING_TO_COMPARE",
    "SAME_NATIONALITY",
    "YES_NO_BASE",
    "YES_NO_GAIN",
]

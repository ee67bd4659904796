"""The logistic k(x) and Hamilton apportionment: properties (hypothesis) and the four target points
(k at windows of 30k, 120k, 125k and 130k tokens). Pure arithmetic, no servers."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keel.core.configuration import Configuration
from tests.property_budget import examples
from keel.retrievers.k_sizing import (
    MIDPOINT_M,
    SATURATION_L,
    SEED_POINTS,
    SLOPE_A,
    apportion_children,
    fit_slope_midpoint,
    hamilton_apportion,
    k_for_config,
    k_for_window,
    k_max_for_config,
    logistic,
    table,
)

windows = st.integers(min_value=1, max_value=10_000_000)


@given(windows, windows)
def test_k_grows_with_the_context_window_and_never_passes_L(x1, x2):
    low, high = sorted((x1, x2))
    assert 0 < logistic(low) <= logistic(high) <= SATURATION_L
    assert 1 <= k_for_window(low) <= k_for_window(high) <= SATURATION_L


def test_the_midpoint_gives_half_of_L_and_extremes_do_not_overflow():
    assert logistic(MIDPOINT_M) == pytest.approx(SATURATION_L / 2)
    assert logistic(-10**12) == 0.0
    assert logistic(10**12) == pytest.approx(SATURATION_L)


def test_k_is_near_every_target_point_and_its_fit_is_a_least_squares_minimum():
    # A least-squares fit cannot go through all four points; every point is within 5 children
    # and 30k (the only point on the rising part) within 1.
    for x, expected in SEED_POINTS:
        assert abs(logistic(x) - expected) <= 5, (x, logistic(x), expected)
    assert abs(logistic(30_000) - 50) <= 1
    residual = sum((logistic(x) - y) ** 2 for x, y in SEED_POINTS)
    for a_factor, m_shift in [(1.05, 0), (0.95, 0), (1, 1_000), (1, -1_000)]:
        other = sum((logistic(x, SATURATION_L, SLOPE_A * a_factor, MIDPOINT_M + m_shift) - y) ** 2 for x, y in SEED_POINTS)
        assert other > residual, "the chosen a, m should be a least-squares minimum"


def test_the_fit_reproduces_the_documented_constants():
    a, m = fit_slope_midpoint()
    assert a == pytest.approx(SLOPE_A, rel=0.01)
    assert m == pytest.approx(MIDPOINT_M, rel=0.01)
    assert "4,096" in table() and "Hamilton" in table()


def test_k_follows_the_configured_window_and_knobs():
    small, large = Configuration(llm_context_window=4096), Configuration(llm_context_window=131_072)
    assert k_for_config(small) == round(logistic(4096))
    assert k_for_config(large) == round(logistic(131_072)) > k_for_config(small)
    assert k_for_config(Configuration(retrieval_k_sizing="fixed", retrieval_k_children=7)) == 7
    assert k_for_config(Configuration(k_logistic_saturation=60.0, llm_context_window=10**7)) == 60
    assert k_max_for_config(small) == k_for_config(small)
    assert k_max_for_config(Configuration(retrieval_k_max=50)) == 50
    with pytest.raises(ValueError, match="context window"):
        k_for_window(0)


# --- Hamilton / largest remainder ---------------------------------------------------------------

ks_lists = st.lists(st.integers(min_value=0, max_value=500), min_size=0, max_size=40)
k_maxes = st.integers(min_value=0, max_value=2_000)


@settings(max_examples=examples(400))
@given(ks_lists, k_maxes)
def test_hamilton_sum_and_bounds(ks, k_max):
    result = hamilton_apportion(ks, k_max)
    total = sum(ks)
    assert len(result) == len(ks)
    assert sum(result) == min(k_max, total)
    if total <= k_max:
        assert result == ks
        return
    for k, share in zip(ks, result):
        exact = Fraction(k_max * k, total)
        assert math.floor(exact) <= share <= math.floor(exact) + 1
        assert 0 <= share <= k


@settings(max_examples=examples(400))
@given(ks_lists, k_maxes)
def test_hamilton_gives_the_leftover_to_the_largest_remainders_ties_to_the_earlier(ks, k_max):
    total = sum(ks)
    if total <= k_max:
        return
    result = hamilton_apportion(ks, k_max)
    remainders = [Fraction(k_max * k, total) - math.floor(Fraction(k_max * k, total)) for k in ks]
    bumped = [share > math.floor(Fraction(k_max * k, total)) for k, share in zip(ks, result)]
    for i in range(len(ks)):
        for j in range(len(ks)):
            if bumped[i] and not bumped[j]:
                assert remainders[i] > remainders[j] or (remainders[i] == remainders[j] and i < j)


def apportion_in_exact_fractions(ks: list[int], k_max: int) -> list[int]:
    """The apportionment formula written out again, independently, in exact fractions:
    alpha = K_max / sum k_i; k_i' = alpha k_i; floors first; the rest one each to the largest
    remainders, equal remainders to the earlier retriever."""
    total = sum(ks)
    if total <= k_max:
        return list(ks)
    alpha = Fraction(k_max, total)
    exact = [alpha * k for k in ks]
    shares = [math.floor(x) for x in exact]
    by_remainder = sorted(range(len(ks)), key=lambda i: (-(exact[i] - shares[i]), i))
    for i in by_remainder[: k_max - sum(shares)]:
        shares[i] += 1
    return shares


@settings(max_examples=examples(300))
@given(st.lists(st.integers(min_value=1, max_value=200), min_size=1, max_size=10), st.integers(1, 4), st.data())
def test_hamilton_ties_match_the_formula_in_exact_fractions(values, copies, data):
    # every value repeated: repeated k_i have equal remainders, so the tie rule decides
    ks = [k for k in values for _ in range(copies + 1)]
    k_max = data.draw(st.integers(min_value=0, max_value=sum(ks) - 1))
    result = hamilton_apportion(ks, k_max)
    assert result == apportion_in_exact_fractions(ks, k_max)
    assert result == hamilton_apportion(list(ks), k_max)  # deterministic
    # among equal k_i the earlier one never gets less
    for i in range(len(ks)):
        for j in range(i + 1, len(ks)):
            if ks[i] == ks[j]:
                assert result[i] >= result[j]


def test_hamilton_tie_examples_from_the_formula():
    # alpha = 1/2: 2.5, 1.5, 2.5, 1.5 -> floors 2, 1, 2, 1; two left, all remainders 0.5 -> first two
    assert hamilton_apportion([5, 3, 5, 3], 8) == apportion_in_exact_fractions([5, 3, 5, 3], 8) == [3, 2, 2, 1]
    # alpha = 1/3 of 26 each: 8.67 three times -> 8, 8, 8 and two left -> the first two
    assert hamilton_apportion([26, 26, 26], 26) == [9, 9, 8]
    # five equal retrievers of 26 sharing 26: one left over after 5 x 5 -> the first
    assert hamilton_apportion([26] * 5, 26) == [6, 5, 5, 5, 5]


def test_hamilton_examples_and_errors():
    assert hamilton_apportion([26, 26, 26], 26) == [9, 9, 8]  # equal remainders: earlier first
    assert hamilton_apportion([26, 10, 3], 26) == [17, 7, 2]
    assert hamilton_apportion([5, 5], 26) == [5, 5]
    assert hamilton_apportion([], 26) == []
    assert hamilton_apportion([3, 3, 3], 0) == [0, 0, 0]
    with pytest.raises(ValueError, match=">= 0"):
        hamilton_apportion([3, -1], 5)
    with pytest.raises(ValueError, match="K_max"):
        hamilton_apportion([3], -1)


@given(st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=100)), min_size=1, max_size=12))
def test_apportion_children_caps_each_retriever_by_what_its_document_holds(available):
    cfg = Configuration()
    shares = apportion_children(len(available), cfg, available)
    k = k_for_config(cfg)
    wanted = [k if cap is None else min(k, cap) for cap in available]
    assert sum(shares) == min(k_max_for_config(cfg), sum(wanted))
    assert all(share <= want for share, want in zip(shares, wanted))


def test_the_table_follows_the_configuration():
    cfg = Configuration(llm_context_window=8192, k_logistic_saturation=60.0)
    text = table(cfg=cfg)
    assert text.startswith("k(x) = 60 /")
    assert f"K_max = k(8192) = {k_for_config(cfg)}:" in text
    assert (SATURATION_L, SLOPE_A, MIDPOINT_M) == (
        Configuration().k_logistic_saturation, Configuration().k_logistic_slope, Configuration().k_logistic_midpoint)

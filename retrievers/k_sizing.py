"""How many child chunks to fetch: a logistic k(x) and Hamilton apportionment.

k(x) = L / (1 + e^(-a (x - m))), with x the chat model's context window in tokens
(the ``llm_context_window`` setting, the embedded llama.cpp server's n_ctx, 4096 by default).
k counts *children* (the parent documents that reach the model are a fraction of the children
found); the parents they lead to are then fitted to the token budget that is really left
(chains/context.py).

Choice of L, a, m. The targets (``SEED_POINTS``, column "seed" below) are k(30k) ≈ 50,
k(120k) ≈ 110, k(125k) ≈ 115, k(130k) ≈ 120, and L is the largest k one pass may fetch (120): k
grows with the window so bigger models get more context without retuning, but never without
bound. No logistic passes through all four points (the last three rise 1 per 1,000 tokens,
steeper than the mean slope from 30k, which a curve that is already bending towards its ceiling
cannot do), so we keep the ceiling L = 120 and least-squares fit a and m to the four points
(``fit_slope_midpoint`` re-derives them): a = 3.6e-5 per token, m = 39,400 tokens. Result (``python -m keel.retrievers.k_sizing``):

    context window x      k(x)   seed
               2,048      24.8
               4,096      26.3      <- the default SmolLM2 / llama.cpp n_ctx: 26 children
               8,192      29.4
              16,384      36.5
              30,000      49.9     50
              32,768      52.9
              65,536      86.3
             120,000     113.8    110
             125,000     114.7    115
             128,000     115.3
             130,000     115.6    120
             200,000     119.6
           1,000,000     120.0

Several retrievers in one pass (one per document of a multi-doc question, or per sub-question)
share K_max children by Hamilton's largest-remainder method, so each gets its fair share:
k_i = round(k(x_i)); if Σk_i <= K_max nothing changes; else α = K_max / Σk_i, k_i' = α k_i, every
retriever first gets floor(k_i'), and the K_max - Σfloor(k_i') children left go one each to the
largest remainders k_i' - floor(k_i'); equal remainders go to the earlier retriever. The sum is
then exactly min(K_max, Σk_i). K_max defaults to round(k(x)) of the window, so N retrievers
together fetch what one would: the context they fill is the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from keel.core.settings import RetrievalSettings, RetrievalWindowSettings

# The ceiling and the least-squares fit of the slope and midpoint to the four target points: the
# defaults of the k_logistic_* settings (one place), named here for the formulas.
_DEFAULTS = RetrievalSettings()
SATURATION_L = _DEFAULTS.k_logistic_saturation
SLOPE_A = _DEFAULTS.k_logistic_slope
MIDPOINT_M = _DEFAULTS.k_logistic_midpoint

SEED_POINTS: tuple[tuple[int, int], ...] = ((30_000, 50), (120_000, 110), (125_000, 115), (130_000, 120))
TABLE_WINDOWS = (2_048, 4_096, 8_192, 16_384, 30_000, 32_768, 65_536, 120_000, 125_000, 128_000, 130_000, 200_000, 1_000_000)


def logistic(x: float, L: float = SATURATION_L, a: float = SLOPE_A, m: float = MIDPOINT_M) -> float:
    """L / (1 + e^(-a (x - m))), computed without overflow for any x."""
    z = -a * (x - m)
    if z > 700:  # e^z would overflow; the value is 0 to double precision
        return 0.0
    return L / (1.0 + math.exp(z))


def k_for_window(context_window: int, L: float = SATURATION_L, a: float = SLOPE_A, m: float = MIDPOINT_M) -> int:
    """round(k(x)) children for a model with ``context_window`` tokens; at least 1."""
    if not isinstance(context_window, int) or context_window < 1:
        raise ValueError(f"context window must be a positive number of tokens, got {context_window!r}")
    return max(1, int(round(logistic(context_window, L, a, m))))


def k_for_config(cfg: RetrievalWindowSettings) -> int:
    """Children to fetch per retrieval for this configuration: logistic k(x) of
    ``cfg.llm_context_window``, or the fixed ``cfg.retrieval_k_children`` when sizing is 'fixed'."""
    if getattr(cfg, "retrieval_k_sizing", "logistic") == "fixed":
        return max(1, int(cfg.retrieval_k_children))
    return k_for_window(int(cfg.llm_context_window), cfg.k_logistic_saturation, cfg.k_logistic_slope, cfg.k_logistic_midpoint)


def k_max_for_config(cfg: RetrievalWindowSettings) -> int:
    """K_max shared by all retrievers of one pass: cfg.retrieval_k_max, or k(x) when that is 0."""
    configured = int(getattr(cfg, "retrieval_k_max", 0) or 0)
    return configured if configured > 0 else k_for_config(cfg)


def hamilton_apportion(ks: Sequence[int], k_max: int) -> list[int]:
    """The multiple-retriever formula: the k_i scaled down to K_max by largest remainders.

    Returns k_i' with Σk_i' = min(K_max, Σk_i), k_i' <= k_i, floor(α k_i) <= k_i' <= floor(α k_i) + 1.
    Deterministic: equal remainders favour the lower index. Exact integer arithmetic (the
    remainder of α k_i is (K_max·k_i mod Σk) / Σk), so no float rounding can break a tie."""
    values = [int(k) for k in ks]
    if any(k < 0 for k in values):
        raise ValueError(f"every k_i must be >= 0, got {list(ks)!r}")
    if not isinstance(k_max, int) or k_max < 0:
        raise ValueError(f"K_max must be an integer >= 0, got {k_max!r}")
    total = sum(values)
    if total <= k_max:
        return values
    floors = [(k_max * k) // total for k in values]
    remainders = [(k_max * k) % total for k in values]
    left = k_max - sum(floors)
    order = sorted(range(len(values)), key=lambda i: (-remainders[i], i))
    for i in order[:left]:
        floors[i] += 1
    return floors


def apportion_children(n_retrievers: int, cfg: RetrievalWindowSettings, available: Sequence[int | None] | None = None) -> list[int]:
    """k per retriever for ``n_retrievers`` sharing one pass: k_i = min(k(x), available_i)
    (a retriever over a small document cannot use more children than it holds), then Hamilton
    down to K_max. ``available[i]`` None means unknown (no cap)."""
    if n_retrievers <= 0:
        return []
    k = k_for_config(cfg)
    caps = list(available) if available is not None else [None] * n_retrievers
    if len(caps) != n_retrievers:
        raise ValueError(f"available has {len(caps)} entries for {n_retrievers} retrievers")
    ks = [k if cap is None else max(0, min(k, int(cap))) for cap in caps]
    return hamilton_apportion(ks, k_max_for_config(cfg))


def fit_slope_midpoint(points: Sequence[tuple[float, float]] = SEED_POINTS, L: float = SATURATION_L) -> tuple[float, float]:
    """Least-squares a and m for a fixed L (Gauss-Newton from the two-point solution).

    How SLOPE_A and MIDPOINT_M were chosen; kept so the choice can be re-derived or re-fitted to
    other intuitions."""
    import numpy as np

    xs = np.array([p[0] for p in points], dtype=float)
    ys = np.array([p[1] for p in points], dtype=float)
    # start: the logistic through the first and last point
    (x1, y1), (x2, y2) = points[0], points[-1]
    y2 = min(y2, L * 0.99)
    g1, g2 = math.log(L / y1 - 1), math.log(L / y2 - 1)
    a = (g1 - g2) / (x2 - x1)
    m = x1 + g1 / a
    for _ in range(200):
        e = np.exp(-a * (xs - m))
        f = L / (1 + e)
        d = L * e / (1 + e) ** 2  # df/dz where z = a (x - m)
        jac = np.stack([d * (xs - m), -d * a], axis=1)
        step, *_ = np.linalg.lstsq(jac, ys - f, rcond=None)
        a, m = a + step[0], m + step[1]
        if abs(step[0]) < 1e-14 and abs(step[1]) < 1e-6:
            break
    return float(a), float(m)


def table(windows: Sequence[int] = TABLE_WINDOWS, cfg: RetrievalWindowSettings | None = None) -> str:
    """The k(x) table with cfg's L, a, m, and Hamilton examples at cfg's window."""
    cfg = cfg or RetrievalWindowSettings()
    L, a_used, m_used = cfg.k_logistic_saturation, cfg.k_logistic_slope, cfg.k_logistic_midpoint
    seed = dict(SEED_POINTS)
    lines = [f"k(x) = {L:g} / (1 + e^(-{a_used:g} (x - {m_used:,.0f})))", "",
             f"{'context window x':>18} {'k(x)':>7} {'round':>6} {'seed':>6}"]
    for x in windows:
        value = logistic(x, L, a_used, m_used)
        lines.append(f"{x:>18,} {value:>7.1f} {int(round(value)):>6} {seed.get(x, ''):>6}")
    if L > max(y for _, y in SEED_POINTS):  # a ceiling under the target points cannot fit them
        a, m = fit_slope_midpoint(L=L)
        lines += ["", f"least-squares fit with L={L:g}: a={a:.4g}, m={m:,.0f} (used: rounded)"]
    window = int(cfg.llm_context_window)
    k = k_for_window(window, L, a_used, m_used)
    lines += ["", f"Hamilton apportionment, K_max = k({window}) = {k}:"]
    for ks in ([k, k], [k, k, k], [k, max(1, k * 2 // 5), max(1, k // 8)], [k] * 5):
        lines.append(f"  k_i = {ks!s:<22} -> {hamilton_apportion(ks, k)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())

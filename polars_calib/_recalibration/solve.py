"""Damped Newton per group, in numpy: the steps, the line search and the stop rule.

The data are read elsewhere (:mod:`polars_calib._recalibration.newton`: one
aggregation per pass); here each pass's loss, gradient and Hessian per group become
the next point of every group still iterating. The 1×1 to 3×3 solves are numpy,
outside the row path, batched over the groups (a Polars expression has no linear
solve, and these are a few numbers per group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Terms", "beta_constraint", "newton", "steps"]

# A Newton step's loss, gradient, Hessian and third derivatives (None: not summed), per group.
Terms = tuple[
    NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64] | None
]

_MAX_STEP_HALVINGS = 40
_MAX_CONDITION = 1e13
_SAFETY = 10.0  # margin of the quadratic-convergence stop
_CHEBYSHEV_FROM = 1e-5  # a pass sums third derivatives while an error may be above this

Constraint = Callable[[NDArray[np.float64], NDArray[np.bool_]], bool]


def beta_constraint(theta: NDArray[np.float64], free: NDArray[np.bool_]) -> bool:
    """Apply betacal's rule: refit with a = 0 if a < 0, else with b = 0 if b < 0 (once)."""
    if not free.all():
        return False
    for k in (0, 1):
        if theta[k] < 0.0:
            free[k], theta[k] = False, 0.0
            return True
    return False


def newton(
    evaluate: Callable[[NDArray[np.int64], NDArray[np.float64], bool], Terms],
    theta: NDArray[np.float64],
    todo: NDArray[np.bool_],
    tol: float,
    max_iter: int,
    constrain: Constraint | None,
    first: Terms | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], list[str | None]]:
    """Run damped Newton per group; one `evaluate` (one data pass) per step for all groups.

    Parameters
    ----------
    evaluate
        ``(groups, their points, far) -> terms``: one pass over the data at the
        points of the groups `groups` (indices); with `far`, the terms include the
        third derivatives (Chebyshev's correction).
    theta
        The starting points, one row per group (updated in place).
    todo
        The groups to fit (the others keep their start, with no passes).
    tol, max_iter
        The stop rule (below) and the most passes per group.
    constrain
        Beta calibration's rule (:func:`beta_constraint`) or None.
    first
        The evaluation at `theta` of every group, if already made (the first pass).

    Returns
    -------
    tuple
        The points, the passes per group and why a group failed (None: fitted).

    Notes
    -----
    A group stops after the step that leaves it within ``tol * (1 + max |θ|)`` of
    the maximum (the step is applied): a step that size or smaller, or, after two
    full (undamped) steps ``s'`` then ``s``, a step whose quadratic-convergence
    prediction is that small: Newton's error after a step is ``C |s|²``, with
    ``C ≈ |s| / |s'|²`` observed (the largest of the group's last two such ratios),
    so the rule is ``max(C) |s|² <= tol (1 + max |θ|) / 10`` once
    ``|s'| <= 0.1 (1 + max |θ|)`` (order 3 after two corrected steps). Neither rule
    needs a pass that only confirms. A step that raises the loss is halved.
    """
    state = _State.start(theta, todo)
    while state.active.any():
        index = np.flatnonzero(state.active)
        if first is not None:
            terms: Terms = (
                first[0][index],
                first[1][index],
                first[2][index],
                None if first[3] is None else first[3][index],
            )
            first = None
        else:
            terms = evaluate(index, state.theta[index], state.far(index))
        state.passes[index] += 1
        loss, grad, hess, third = terms
        moves, chebyshev, usable = steps(grad, hess, third, state.free[index])
        for local, g in enumerate(index.tolist()):
            if not np.isfinite(loss[local]) or not np.all(np.isfinite(grad[local])):
                state.fail(g, "the log-likelihood is not finite")
            elif state.raised(g, float(loss[local])):
                state.halve(g)
            elif not usable[local]:
                state.fail(
                    g,
                    "not identifiable (the probabilities take too few distinct "
                    "values, or the classes are separated)",
                )
            else:
                predicted = state.take(g, float(loss[local]), moves[local], bool(chebyshev[local]))
                state.stop_or_go_on(g, predicted, tol, max_iter, constrain)
    return state.theta, state.passes, state.failures


@dataclass
class _State:
    """Each group's point, its last accepted point and step, and its convergence record."""

    theta: NDArray[np.float64]
    active: NDArray[np.bool_]
    free: NDArray[np.bool_]  # the parameters not held by `constrain`
    failures: list[str | None]
    passes: NDArray[np.int64]
    last_loss: NDArray[np.float64]  # inf: none yet (or a new problem after `constrain`)
    last_theta: NDArray[np.float64]
    step: NDArray[np.float64]
    halvings: NDArray[np.int64]
    reached: NDArray[np.float64]  # the size of the full step that reached the point (NaN: none)
    cubic: NDArray[np.bool_]  # that step was corrected (Chebyshev)
    ratio: NDArray[np.float64]  # the largest contraction ratio |s| / |s'|**order seen
    orders: NDArray[np.int64]  # the order of `ratio`

    @classmethod
    def start(cls, theta: NDArray[np.float64], todo: NDArray[np.bool_]) -> _State:
        """Return the state before the first pass."""
        n, k = theta.shape
        return cls(
            theta=theta,
            active=todo.copy(),
            free=np.ones((n, k), dtype=bool),
            failures=[None] * n,
            passes=np.zeros(n, dtype=np.int64),
            last_loss=np.full(n, np.inf),
            last_theta=theta.copy(),
            step=np.zeros_like(theta),
            halvings=np.zeros(n, dtype=np.int64),
            reached=np.full(n, np.nan),
            cubic=np.zeros(n, dtype=bool),
            ratio=np.zeros(n),
            orders=np.zeros(n, dtype=np.int64),
        )

    def far(self, index: NDArray[np.int64]) -> bool:
        """Tell whether a group's error may be above :data:`_CHEBYSHEV_FROM`.

        The error is about ``|s|**3`` after a corrected step ``s`` and ``|s|**2``
        after a Newton step: while it may be large, a pass sums third derivatives.
        """
        sizes = np.max(np.abs(self.step[index]), axis=1)
        scales = 1.0 + np.max(np.abs(self.theta[index]), axis=1)
        error = np.where(self.cubic[index], sizes**3, sizes**2)
        return bool(np.any(error > _CHEBYSHEV_FROM * scales))

    def fail(self, g: int, reason: str) -> None:
        """Stop group `g`, unfitted, for `reason`."""
        self.failures[g], self.active[g] = reason, False

    def raised(self, g: int, loss: float) -> bool:
        """Tell whether the step that reached group `g`'s point raised its loss."""
        last = self.last_loss[g]
        return not np.isinf(last) and loss > last + 1e-12 * abs(last)

    def halve(self, g: int) -> None:
        """Go back half the step of group `g` (another pass for it), or fail it."""
        self.halvings[g] += 1
        self.reached[g], self.cubic[g] = np.nan, False
        if self.halvings[g] > _MAX_STEP_HALVINGS:
            self.fail(g, "no step improves the likelihood (separated classes?)")
            return
        self.step[g] /= 2.0
        self.theta[g] = self.last_theta[g] + self.step[g]

    def take(self, g: int, loss: float, move: NDArray[np.float64], corrected: bool) -> float:
        """Accept group `g`'s point (of loss `loss`) and take the step `move` from it.

        Returns the error the convergence rate predicts after the step (inf: none).
        """
        self.halvings[g] = 0
        self.last_theta[g], self.last_loss[g], self.step[g] = self.theta[g], loss, move
        self.theta[g] = self.theta[g] + move
        size = float(np.max(np.abs(move)))
        # The order of convergence: 3 when this step and the one before it were both
        # corrected (Chebyshev), else 2 (Newton).
        order = 3 if corrected and self.cubic[g] else 2
        before, self.reached[g], self.cubic[g] = self.reached[g], size, corrected
        if not (np.isfinite(before) and 0.0 < before <= 0.1 * self._scale(g)):
            return np.inf
        rate = size / before**order  # C in error' = C error**order
        self.ratio[g] = max(self.ratio[g], rate) if order == self.orders[g] else rate
        self.orders[g] = order
        return float(self.ratio[g] * size**order)

    def stop_or_go_on(
        self, g: int, predicted: float, tol: float, max_iter: int, constrain: Constraint | None
    ) -> None:
        """Stop group `g` once within `tol` of its maximum, or fail it at `max_iter`.

        `predicted` is the error :meth:`take` predicts after the group's last step.
        """
        size, scale = float(self.reached[g]), self._scale(g)
        if size <= tol * scale or predicted <= tol * scale / _SAFETY:
            if constrain is not None and constrain(self.theta[g], self.free[g]):
                self.last_loss[g] = np.inf  # a new problem: start its line search afresh
                self.reached[g], self.ratio[g], self.orders[g] = np.nan, 0.0, 0
                return
            self.active[g] = False
        elif self.passes[g] >= max_iter or np.max(np.abs(self.theta[g])) > 1e8:
            self.fail(g, f"did not converge in {self.passes[g]} Newton steps (separated classes?)")

    def _scale(self, g: int) -> float:
        return 1.0 + float(np.max(np.abs(self.theta[g])))


def steps(
    grad: NDArray[np.float64],
    hess: NDArray[np.float64],
    third: NDArray[np.float64] | None,
    free: NDArray[np.bool_],
) -> tuple[NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_]]:
    """Return each group's Newton step, whether it was corrected, whether it is usable.

    The step is over the group's free parameters (0 for the others); its Hessian is
    usable when finite with a condition number at most :data:`_MAX_CONDITION`.
    Chebyshev's correction ``-H^-1 T[s, s] / 2`` gives cubic convergence near the
    maximum; far from it (a correction above half the step) the step is plain
    Newton. The solves are batched over the groups that share their free parameters.
    """
    m, k = grad.shape
    moves, corrected = np.zeros((m, k)), np.zeros(m, dtype=bool)
    usable = np.zeros(m, dtype=bool)
    for pattern in np.unique(free, axis=0):
        rows = np.flatnonzero((free == pattern).all(axis=1))
        f = np.flatnonzero(pattern)
        h = hess[np.ix_(rows, f, f)]
        eye = np.eye(len(f))
        with np.errstate(all="ignore"):
            ok = np.asarray(np.isfinite(h).all(axis=(1, 2)), dtype=bool)
            h = np.where(ok[:, None, None], h, eye)  # an unusable one: solved, then dropped
            ok &= np.linalg.cond(h) <= _MAX_CONDITION
            h = np.where(ok[:, None, None], h, eye)
            newton_step = -np.linalg.solve(h, grad[np.ix_(rows, f)][..., None])[..., 0]
            if third is not None:
                tensor = third[np.ix_(rows, f, f, f)]
                pulled = np.einsum("nijl,nj,nl->ni", tensor, newton_step, newton_step)
                correction = -0.5 * np.linalg.solve(h, pulled[..., None])[..., 0]
                small = np.max(np.abs(correction), axis=1) <= 0.5 * np.max(
                    np.abs(newton_step), axis=1
                )
                newton_step = np.where(small[:, None], newton_step + correction, newton_step)
                corrected[rows] = small
        moves[np.ix_(rows, f)] = newton_step
        usable[rows] = ok
    return moves, corrected, usable

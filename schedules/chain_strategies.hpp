// Strategies that schedule a chain's training step (forward then backward) under a memory
// budget in bytes. Every result passes simulate() and reports its peak and time from it.
// A budget no schedule of the strategy meets throws Infeasible (infeasible.hpp) carrying the
// smallest budget at which the same call succeeds; a bad chain throws std::invalid_argument.
#pragma once

#include "schedules/chain.hpp"
#include "schedules/chain_schedule.hpp"
#include "schedules/infeasible.hpp"

#include <cstdint>
#include <vector>

namespace kiln::sched {

// Saves everything: forward_all 1..L, backward L..1. Fastest, most memory; never throws
// Infeasible (it takes no budget).
ChainResult store_all(const Chain& chain);

// Equal segments as torch.utils.checkpoint.checkpoint_sequential: the first segments-1
// segments have L / segments stages, the last the rest. Segments but the last run forward
// keeping only their input; in backward each is recomputed with forward_all and differentiated.
std::vector<ChainOp> sqrt_schedule(const Chain& chain, int segments);

// The fastest sqrt_schedule over segment counts 1..L within the budget (ties: fewer segments).
ChainResult sqrt_segments(const Chain& chain, int64_t budget);

// The optimal dynamic program of Beaumont, Eyraud-Dubois, Herrmann, Joly and Shilova
// (hal-02352969) with the three forward modes. Memory is discretised into slots of
// ceil(budget / slots) bytes with every size rounded up, so the schedule always fits the
// budget in bytes; it is optimal when the slot size divides every size. Budgets at or above
// the returned min_feasible_bytes of an Infeasible always succeed. Throws
// std::invalid_argument when `slots` is too few to hold the chain at any slot size, or the
// table (L^2/2 * slots entries) would exceed 2^26 entries.
ChainResult rotor(const Chain& chain, int64_t budget, int slots = 500);

// Which schedules exhaustive() searches. Persistent schedules never drop a checkpoint (an
// activation kept as the input of a forward_input or forward_all) before the backward that
// needs it, nor an abar before its backward: the class rotor's dynamic program covers (each
// subproblem keeps its input until its last backward), so rotor equals this oracle (the tests
// check it on hundreds of chains). `all` adds every schedule simulate() accepts,
// e.g. using a checkpoint for one more recomputation and then dropping it for room, to be
// recomputed later from an earlier one; such schedules can be faster than rotor's.
enum class ExhaustiveScope { persistent, all };

// The minimum-time schedule within the budget, by a shortest-path search over execution
// states; the oracle for small chains (L <= 8).
ChainResult exhaustive(const Chain& chain, int64_t budget,
                       ExhaustiveScope scope = ExhaustiveScope::persistent);

} // namespace kiln::sched

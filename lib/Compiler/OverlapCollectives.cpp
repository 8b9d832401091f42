// All-reduces whose result is needed only some steps later (data-parallel
// gradient buckets, reduced during the backward and read by the optimizer)
// become overlapped collectives: the step starts them, and a Wait step right
// before the first step that touches their buffers finishes them.
#include "ExecutableBuilder.h"

#include "colo/Runtime/Executable.h"

#include "llvm/ADT/STLExtras.h"

#include <set>

using namespace colo;
namespace rt = colo::runtime;

void colo::overlapCollectives(rt::Program &program) {
  // The storage each step touches, by step.
  int n = program.steps_size();
  std::vector<std::set<int>> storage(n);
  for (int i = 0; i < n; ++i)
    rt::forEachBuffer(program.steps(i),
                      [&](int id) { storage[i].insert(storageOf(program, id)); });
  // Per step, the waits that go right before it (index n: the end).
  std::vector<std::vector<int>> waitsBefore(n + 1);
  for (int i = 0; i < n; ++i) {
    rt::Step &step = *program.mutable_steps(i);
    if (!step.has_collective() || step.collective().kind() != rt::Collective::ALL_REDUCE)
      continue;
    auto touches = [&](int j) {
      return llvm::any_of(storage[i], [&](int id) { return storage[j].count(id) > 0; });
    };
    int next = i + 1;
    while (next < n && !touches(next))
      ++next;
    if (next == i + 1)
      continue; // needed at once: nothing to overlap
    step.mutable_collective()->set_overlap(true);
    waitsBefore[next].push_back(i);
  }
  // Rebuild the list with the waits, renumbering the steps they name.
  std::vector<rt::Step> steps(program.steps().begin(), program.steps().end());
  std::vector<int> newIndex(n);
  program.clear_steps();
  for (int i = 0; i <= n; ++i) {
    for (int started : waitsBefore[i]) {
      rt::Step *wait = program.add_steps();
      wait->set_name(program.steps(newIndex[started]).name() + ".wait");
      wait->mutable_wait()->set_collective_step(newIndex[started]);
    }
    if (i < n) {
      newIndex[i] = program.steps_size();
      *program.add_steps() = std::move(steps[i]);
    }
  }
}

#include "colo/Planner/Search.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <algorithm>
#include <atomic>
#include <mutex>

namespace colo::planner {

namespace {
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i <= n; ++i)
    if (n % i == 0)
      d.push_back(i);
  return d;
}

/// The plans of one mesh (dp x pp x (ulysses or ring) x tp, a tp2d grid
/// with its 2.5-D depth, or a tp3d cube): every microbatch size,
/// schedule, ZeRO stage, sequence parallelism, recomputation and offload
/// that colo compiles with it.
void addMeshPlans(std::vector<Plan> &plans, const ModelProfile &m, const ClusterSpec &c,
                  const SearchOptions &o, int64_t dp, int64_t tp, int64_t pp, int64_t ulysses,
                  int64_t ring, int64_t tp2d = 1, int64_t depth = 1, int64_t tp3d = 1) {
  int64_t perRank = o.globalBatch / dp;
  for (int64_t mbs : divisors(perRank)) {
    if (mbs > 64)
      break;
    // A 2-D grid's rows (and 2.5-D's copies), two axes of a 3-D cube split
    // the microbatch's samples.
    if (mbs % (tp2d * depth * tp3d * tp3d) != 0)
      continue;
    int64_t micro = perRank / mbs;
    std::vector<std::pair<Schedule, int64_t>> schedules;
    if (pp == 1) {
      schedules.push_back({Schedule::None, 1});
    } else {
      schedules.push_back({Schedule::OneFOneB, 1});
      schedules.push_back({Schedule::GPipe, 1});
      schedules.push_back({Schedule::ZeroBubbleH1, 1});
      for (int64_t v : {2, 4})
        if (m.layers % (pp * v) == 0 && micro % pp == 0)
          schedules.push_back({Schedule::Interleaved, v});
    }
    for (auto [sched, v] : schedules)
      for (int zero = 0; zero <= (pp > 1 ? 2 : 3); ++zero)
        for (bool sp : {false, true}) {
          if (sp && (tp == 1 || ulysses * ring > 1 || sequenceParallelSplit(m, mbs) % tp))
            continue;
          for (Recompute rc : {Recompute::None, Recompute::Selective, Recompute::Full}) {
            if (!o.allowRecompute && rc != Recompute::None)
              continue;
            // Fused attention keeps no probabilities: selective
            // recomputation would be the plain plan again.
            if (rc == Recompute::Selective && c.fusedAttention > 0)
              continue;
            for (Offload off : {Offload::None, Offload::Optimizer, Offload::OptimizerParams})
              for (bool activations : {false, true}) {
                if ((!o.allowOffload && off != Offload::None) ||
                    (activations && !(o.allowOffload && o.allowActivationOffload)))
                  continue;
                Plan p;
                p.dp = dp, p.tp = tp, p.pp = pp, p.sequenceParallel = sp;
                p.ulysses = ulysses, p.ring = ring, p.tp2d = tp2d, p.tp2dDepth = depth;
                p.tp3d = tp3d;
                p.zero = zero, p.microBatch = mbs, p.microBatches = micro;
                p.schedule = sched, p.virtualStages = v;
                p.recompute = rc, p.offload = off, p.offloadActivations = activations;
                p.vocabParallel = m.vocabParallel && tp > 1;
                // Only what colo compile builds.
                if (llvm::Error e = checkCompilable(p)) {
                  llvm::consumeError(std::move(e));
                  continue;
                }
                plans.push_back(p);
              }
          }
        }
  }
}

std::vector<Plan> enumerate(const ModelProfile &m, const ClusterSpec &c,
                            const SearchOptions &o) {
  std::vector<Plan> plans;
  int64_t n = c.worldSize();
  for (int64_t tp : divisors(n)) {
    // Tensor parallelism stays inside a node, where its all-reduces are cheap.
    if (tp > c.devicesPerNode || m.heads % tp || m.hidden % tp)
      continue;
    for (int64_t pp : divisors(n / tp)) {
      if (pp > m.layers)
        continue;
      for (int64_t sp : divisors(n / (tp * pp))) {
        int64_t dp = n / (tp * pp * sp);
        if (o.globalBatch % dp != 0)
          continue;
        // Ulysses' all-to-alls stay inside a node with tensor parallelism's,
        // and split the sequence and a tensor-parallel rank's heads.
        if (sp == 1 || (tp * sp <= c.devicesPerNode && m.seq % sp == 0 && (m.heads / tp) % sp == 0))
          addMeshPlans(plans, m, c, o, dp, tp, pp, sp, 1);
        // A ring passes its blocks to its neighbours only, so it may span
        // nodes; in zigzag order it cuts the sequence into 2 sp chunks.
        if (sp > 1 && pp == 1 && m.seq % (2 * sp) == 0)
          addMeshPlans(plans, m, c, o, dp, tp, pp, 1, sp);
      }
    }
  }
  // 2-D tensor parallelism: a q x q grid (its broadcasts go to the rank's
  // row and column only, so it may span nodes) in place of tp; 2.5-D: d
  // copies of it, each on its part of the microbatch.
  for (int64_t q = 2; q * q <= n; ++q) {
    if (n % (q * q) || m.heads % q || m.hidden % q)
      continue;
    for (int64_t depth : divisors(n / (q * q)))
      for (int64_t pp : divisors(n / (q * q * depth))) {
        int64_t dp = n / (q * q * depth * pp);
        if (pp <= m.layers && o.globalBatch % dp == 0)
          addMeshPlans(plans, m, c, o, dp, 1, pp, 1, 1, q, depth);
      }
  }
  // 3-D tensor parallelism: a q x q x q cube in place of tp (each of its
  // collectives runs over one axis of it).
  for (int64_t q = 2; q * q * q <= n; ++q) {
    if (n % (q * q * q) || m.heads % q || m.hidden % (q * q))
      continue;
    for (int64_t pp : divisors(n / (q * q * q))) {
      int64_t dp = n / (q * q * q * pp);
      if (pp <= m.layers && o.globalBatch % dp == 0)
        addMeshPlans(plans, m, c, o, dp, 1, pp, 1, 1, 1, 1, q);
    }
  }
  return plans;
}

/// Faster first; of two equally fast plans the one that holds less device
/// memory (ZeRO-2 over ZeRO-1 when the step is the same); then the plan's
/// text, so that the order is deterministic.
bool faster(const Prediction &a, const Prediction &b) {
  if (a.stepTime != b.stepTime)
    return a.stepTime < b.stepTime;
  if (a.memory.total() != b.memory.total())
    return a.memory.total() < b.memory.total();
  return a.plan.str() < b.plan.str();
}

double overflow(const Prediction &p, const ClusterSpec &c) {
  return p.memory.total() / (kAllocatableShare * c.deviceMemory);
}
} // namespace

llvm::Expected<SearchResult> searchPlans(const ModelProfile &m, const ClusterSpec &c,
                                         const SearchOptions &o) {
  if (o.globalBatch <= 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the global batch must be positive");
  std::vector<Plan> plans = enumerate(m, c, o);
  SearchResult result;
  if (plans.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "no mesh of " + llvm::Twine(c.worldSize()) + " devices divides global batch " +
            llvm::Twine(o.globalBatch) + " for a model with " + llvm::Twine(m.heads) +
            " heads and " + llvm::Twine(m.layers) + " layers");

  unsigned threads = o.threads ? o.threads : llvm::hardware_concurrency().compute_thread_count();
  std::atomic<int64_t> done{0}, pruned{0};
  auto predictAll = [&](const std::vector<Plan> &plans, size_t total) {
    std::vector<std::optional<Prediction>> predictions(plans.size());
    llvm::DefaultThreadPool pool(llvm::hardware_concurrency(threads));
    size_t chunk = std::max<size_t>(1, plans.size() / (threads * 8));
    for (size_t begin = 0; begin < plans.size(); begin += chunk) {
      size_t end = std::min(plans.size(), begin + chunk);
      pool.async([&, begin, end] {
        for (size_t i = begin; i < end; ++i) {
          // Model state alone is a lower bound on memory: prune before timing.
          double stateParams = (m.pre.params + m.layers * m.layer.params + m.post.params) /
                               (plans[i].tp * plans[i].pp);
          MemoryBreakdown state = modelStateMemory(
              stateParams, plans[i].zero, plans[i].dp, plans[i].offload);
          if (state.total() > 4 * c.deviceMemory) {
            ++pruned;
          } else if (auto p = predict(m, c, plans[i])) {
            predictions[i] = std::move(*p);
          } else {
            llvm::consumeError(p.takeError());
          }
          ++done;
        }
        if (o.progress)
          o.progress(done.load(), total);
      });
    }
    pool.wait();
    return predictions;
  };
  std::vector<std::optional<Prediction>> predictions = predictAll(plans, plans.size());
  // Where keeping every activation does not fit, recompute=budget: per
  // pipeline stage, per layer, the least recomputation that fits
  // (colo-recompute's dynamic program, which colo compile runs for the
  // device memory the plan records).
  // Only where recomputing every layer fits: budget holds no less.
  llvm::StringSet<> fullFits;
  for (const std::optional<Prediction> &p : predictions)
    if (p && p->fits && p->plan.recompute == Recompute::Full) {
      Plan kept = p->plan;
      kept.recompute = Recompute::None;
      fullFits.insert(kept.str());
    }
  std::vector<Plan> budgeted;
  if (o.allowRecompute)
    for (const std::optional<Prediction> &p : predictions)
      if (p && !p->fits && p->plan.recompute == Recompute::None &&
          !p->plan.offloadActivations && fullFits.contains(p->plan.str())) {
        Plan b = p->plan;
        b.recompute = Recompute::Budget;
        b.deviceMemory = int64_t(kAllocatableShare * c.deviceMemory);
        budgeted.push_back(b);
      }
  for (std::optional<Prediction> &p : predictAll(budgeted, plans.size() + budgeted.size()))
    predictions.push_back(std::move(p));
  plans.insert(plans.end(), budgeted.begin(), budgeted.end());
  result.evaluated = plans.size();
  result.pruned = pruned;
  for (auto &p : predictions) {
    if (!p)
      continue;
    if (p->fits)
      result.best.push_back(*p);
    else if (!result.closest || overflow(*p, c) < overflow(*result.closest, c) ||
             (overflow(*p, c) == overflow(*result.closest, c) &&
              p->plan.str() < result.closest->plan.str()))
      result.closest = *p;
  }
  std::sort(result.best.begin(), result.best.end(), faster);
  if (static_cast<int64_t>(result.best.size()) > o.topK)
    result.best.resize(o.topK);
  if (!result.best.empty()) {
    result.closest.reset();
    return result;
  }
  if (!result.closest) {
    // Everything was pruned: predict the pruned points to name the closest.
    for (const Plan &plan : plans)
      if (auto p = predict(m, c, plan)) {
        if (!result.closest || overflow(*p, c) < overflow(*result.closest, c))
          result.closest = *p;
      } else {
        llvm::consumeError(p.takeError());
      }
  }
  // Nothing fits: say what would. Searches of larger clusters and of the
  // options the request ruled out, each reported with its fastest plan.
  auto tryWith = [&](const ClusterSpec &cc, SearchOptions oo, const std::string &what) {
    oo.progress = nullptr;
    oo.topK = 1;
    std::vector<Plan> ps = enumerate(m, cc, oo);
    std::optional<Prediction> fastest;
    for (const Plan &plan : ps)
      if (auto p = predict(m, cc, plan)) {
        if (p->fits && (!fastest || faster(*p, *fastest)))
          fastest = *p;
      } else {
        llvm::consumeError(p.takeError());
      }
    if (fastest)
      result.suggestions.push_back(
          what + ": " + fastest->plan.str() + " (" +
          llvm::formatv("{0:F2} s per step, {1:F1} GiB per device", fastest->stepTime,
                        fastest->memory.total() / (1 << 30))
              .str() +
          ")");
    return fastest.has_value();
  };
  if (!o.allowOffload) {
    SearchOptions oo = o;
    oo.allowOffload = true;
    tryWith(c, oo, "with offload to host memory");
  }
  if (!o.allowRecompute) {
    SearchOptions oo = o;
    oo.allowRecompute = true;
    tryWith(c, oo, "with activation recomputation");
  }
  if (!o.allowActivationOffload) {
    SearchOptions oo = o;
    oo.allowOffload = oo.allowActivationOffload = true;
    tryWith(c, oo, "with the activations offloaded too (--offload-activations)");
  }
  // More devices: the same options first, then with offload and recompute.
  SearchOptions everything = o;
  everything.allowOffload = everything.allowRecompute = everything.allowActivationOffload = true;
  for (const SearchOptions *opts : {&o, static_cast<const SearchOptions *>(&everything)}) {
    bool found = false;
    for (int64_t f = 2; f <= 1024 && c.worldSize() * f <= (1 << 16) && !found; f *= 2) {
      // Grow within a node up to the larger of its size and 8, then add nodes.
      ClusterSpec bigger = c;
      int64_t world = c.worldSize() * f, perNode = std::max<int64_t>(c.devicesPerNode, 8);
      bigger.devicesPerNode = std::min(world, perNode);
      bigger.nodes = world / bigger.devicesPerNode;
      if (bigger.worldSize() != world)
        continue;
      found = tryWith(bigger, *opts,
                      "with " + std::to_string(bigger.worldSize()) + " devices (" +
                          std::to_string(bigger.nodes) + " x " +
                          std::to_string(bigger.devicesPerNode) + ")" +
                          (opts == &everything && (!o.allowOffload || !o.allowRecompute)
                               ? " and offload/recompute allowed"
                               : ""));
    }
    if (found || (o.allowOffload && o.allowRecompute))
      break;
  }
  return result;
}

} // namespace colo::planner

#include "colo/Planner/Plan.h"
#include "colo/Planner/Cluster.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace colo::planner {

StringRef scheduleName(Schedule s) {
  switch (s) {
  case Schedule::None: return "none";
  case Schedule::GPipe: return "gpipe";
  case Schedule::OneFOneB: return "1f1b";
  case Schedule::Interleaved: return "interleaved";
  case Schedule::ZeroBubbleH1: return "zb-h1";
  }
  return "none";
}

StringRef recomputeName(Recompute r) {
  switch (r) {
  case Recompute::None: return "none";
  case Recompute::Selective: return "selective";
  case Recompute::Full: return "full";
  case Recompute::Budget: return "budget";
  }
  return "none";
}

std::string offloadName(Offload o, bool activations) {
  std::string s = o == Offload::Optimizer         ? "optimizer"
                  : o == Offload::OptimizerParams ? "optimizer+params"
                                                  : "";
  if (activations)
    s += s.empty() ? "activations" : "+activations";
  return s.empty() ? "none" : s;
}

std::string Plan::str() const {
  std::string s = formatv("dp={0},tp={1},pp={2}", dp, tp, pp).str();
  if (tp2dDepth > 1)
    s += formatv(",tp2p5d={0},{1}", tp2d, tp2dDepth).str();
  else if (tp2d > 1)
    s += formatv(",tp2d={0}", tp2d).str();
  if (tp3d > 1)
    s += formatv(",tp3d={0}", tp3d).str();
  if (sequenceParallel)
    s += ",sp";
  if (vocabParallel)
    s += ",vocab";
  if (ulysses > 1)
    s += formatv(",ulysses={0}", ulysses).str();
  if (ring > 1)
    s += formatv(",ring={0}{1}", ring, zigzag ? "" : ",zigzag=0").str();
  s += formatv(",zero={0},mbs={1},micro={2}", zero, microBatch, microBatches).str();
  if (pp > 1)
    s += ",schedule=" + scheduleName(schedule).str();
  if (schedule == Schedule::Interleaved)
    s += formatv(",v={0}", virtualStages).str();
  if (recompute != Recompute::None)
    s += ",recompute=" + recomputeName(recompute).str();
  if (offload != Offload::None || offloadActivations)
    s += ",offload=" + offloadName(offload, offloadActivations);
  if (localBatchNorm)
    s += ",bn=local";
  return s;
}

static Error bad(const Twine &msg) {
  return createStringError(inconvertibleErrorCode(), msg);
}

static Error setField(Plan &p, StringRef key, StringRef value, StringRef what) {
  auto number = [&](int64_t &out, int64_t min) -> Error {
    if (value.getAsInteger(10, out) || out < min)
      return bad(what + ": '" + key + "' must be an integer >= " + Twine(min) +
                 ", got '" + value + "'");
    return Error::success();
  };
  if (key == "dp") return number(p.dp, 1);
  if (key == "tp") return number(p.tp, 1);
  if (key == "pp") return number(p.pp, 1);
  if (key == "mbs") return number(p.microBatch, 1);
  if (key == "micro") return number(p.microBatches, 1);
  if (key == "v") return number(p.virtualStages, 1);
  if (key == "ulysses") return number(p.ulysses, 1);
  if (key == "ring") return number(p.ring, 1);
  if (key == "tp2d") return number(p.tp2d, 1);
  if (key == "depth") return number(p.tp2dDepth, 1);
  if (key == "tp3d") return number(p.tp3d, 1);
  if (key == "zigzag") {
    if (value != "0" && value != "1" && value != "true" && value != "false")
      return bad(what + ": zigzag is 1 or 0 (true or false), not '" + value + "'");
    p.zigzag = value == "1" || value == "true";
    return Error::success();
  }
  if (key == "zero") {
    int64_t z;
    if (Error e = number(z, 0))
      return e;
    if (z > 3)
      return bad(what + ": ZeRO stage must be 0, 1, 2 or 3, got " + Twine(z));
    p.zero = z;
    return Error::success();
  }
  if (key == "sp") {
    p.sequenceParallel = value.empty() || value == "1" || value == "true";
    return Error::success();
  }
  if (key == "vocab") {
    p.vocabParallel = value.empty() || value == "1" || value == "true";
    return Error::success();
  }
  if (key == "bn") {
    if (value != "sync" && value != "local")
      return bad(what + ": unknown batch norm statistics '" + value +
                 "' (sync: over the data-parallel group, local: per rank)");
    p.localBatchNorm = value == "local";
    return Error::success();
  }
  if (key == "schedule") {
    if (value == "gpipe") p.schedule = Schedule::GPipe;
    else if (value == "1f1b") p.schedule = Schedule::OneFOneB;
    else if (value == "interleaved") p.schedule = Schedule::Interleaved;
    else if (value == "zb-h1") p.schedule = Schedule::ZeroBubbleH1;
    else if (value == "none") p.schedule = Schedule::None;
    else
      return bad(what + ": unknown schedule '" + value +
                 "' (gpipe, 1f1b, interleaved, zb-h1)");
    return Error::success();
  }
  if (key == "recompute") {
    if (value == "none") p.recompute = Recompute::None;
    else if (value == "selective") p.recompute = Recompute::Selective;
    else if (value == "full") p.recompute = Recompute::Full;
    else if (value == "budget") p.recompute = Recompute::Budget;
    else
      return bad(what + ": unknown recompute policy '" + value +
                 "' (none, selective, full, budget)");
    return Error::success();
  }
  if (key == "offload") {
    // Any of optimizer, params and activations, joined by '+'.
    bool optimizer = false, params = false, activations = false;
    SmallVector<StringRef> parts;
    StringRef(value).split(parts, '+');
    for (StringRef part : parts) {
      if (part == "optimizer") optimizer = true;
      else if (part == "params") params = true;
      else if (part == "activations") activations = true;
      else if (part != "none" || parts.size() > 1)
        return bad(what + ": unknown offload '" + value +
                   "' (none, or any of optimizer, params, activations joined by '+')");
    }
    if (params && !optimizer)
      return bad(what + ": offload=params needs the optimizer on the host too, where the "
                        "parameters are updated: offload=optimizer+params");
    p.offload = params      ? Offload::OptimizerParams
                : optimizer ? Offload::Optimizer
                            : Offload::None;
    p.offloadActivations = activations;
    return Error::success();
  }
  return bad(what + ": unknown plan field '" + key +
             "' (dp, tp, pp, tp2d, tp2p5d, tp3d, sp, vocab, ulysses, ring, zigzag, zero, mbs, "
             "micro, schedule, v, recompute, offload)");
}

static Error check(Plan &p, StringRef what) {
  // 2^24 devices is beyond any cluster; the bound keeps every product of
  // sizes the planner forms far from overflowing.
  constexpr int64_t kMaxDevices = int64_t(1) << 24;
  int64_t devices = 1;
  for (int64_t n : {p.dp, p.tp, p.pp, p.ulysses, p.ring, p.tp2d, p.tp2d, p.tp2dDepth, p.tp3d,
                    p.tp3d, p.tp3d}) {
    if (n > kMaxDevices || devices * n > kMaxDevices)
      return bad(what + ": the plan uses too many devices (dp*tp*pp*ulysses*ring times a "
                        "grid's q^2*d or a cube's q^3 > 2^24)");
    devices *= n;
  }
  if (p.microBatch > kMaxDevices || p.microBatches > kMaxDevices || p.virtualStages > 1024)
    return bad(what + ": micro_batch and micro_batches must be at most 2^24, "
                      "virtual_stages at most 1024");
  if (p.pp == 1)
    p.schedule = Schedule::None;
  else if (p.schedule == Schedule::None)
    p.schedule = Schedule::OneFOneB;
  if (p.schedule == Schedule::ZeroBubbleH1 && p.virtualStages > 1)
    return bad(what + ": zb-h1 runs one stage per pipeline rank (v = 1); virtual stages "
                      "go with schedule=interleaved");
  if (p.schedule != Schedule::Interleaved)
    p.virtualStages = 1;
  if (int(p.tp > 1) + int(p.tp2d > 1) + int(p.tp3d > 1) > 1)
    return bad(what + ": choose one tensor parallelism: 'tp' (1-D, Megatron's), 'tp2d' "
                      "(2-D, a tp2d x tp2d grid), 'tp2p5d' (2.5-D) or 'tp3d' (3-D, a cube)");
  if (p.tp2dDepth > 1 && p.tp2d < 2)
    return bad(what + ": 2.5-D tensor parallelism's depth (" + Twine(p.tp2dDepth) +
               ") needs a grid of side q >= 2: tp2p5d=q,d");
  if (p.sequenceParallel && p.tp == 1)
    return bad(what + ": sequence parallelism needs tp > 1");
  if (p.vocabParallel && p.tp == 1)
    return bad(what + ": vocab parallelism needs tp > 1");
  if (int(p.sequenceParallel) + int(p.ulysses > 1) + int(p.ring > 1) > 1)
    return bad(what + ": choose one sequence parallelism: Megatron's 'sp' (with tp), "
                      "'ulysses' or 'ring' (each its own mesh axis)");
  if (p.schedule == Schedule::Interleaved && p.virtualStages < 2)
    return bad(what + ": the interleaved schedule needs v >= 2 virtual stages");
  if (p.schedule == Schedule::Interleaved && p.microBatches % p.pp != 0)
    return bad(what + ": the interleaved schedule needs microbatches (" +
               Twine(p.microBatches) + ") to be a multiple of pp (" + Twine(p.pp) + ")");
  return Error::success();
}

Error checkCompilable(const Plan &p) {
  struct Unsupported {
    bool (*combines)(const Plan &);
    const char *what;
  };
  static const Unsupported table[] = {
      {[](const Plan &p) { return p.zero >= 3 && p.pp > 1; },
       "ZeRO stage 3 with pipeline parallelism"},
      {[](const Plan &p) { return p.ring > 1 && p.pp > 1; },
       "ring attention with pipeline parallelism"},
      {[](const Plan &p) { return p.ring > 1 && p.vocabParallel; },
       "ring attention with vocabulary parallelism"},
      {[](const Plan &p) { return p.tp2d > 1 && p.sequenceRanks() > 1; },
       "2-D or 2.5-D tensor parallelism with Ulysses or ring attention"},
      {[](const Plan &p) { return p.tp3d > 1 && p.sequenceRanks() > 1; },
       "3-D tensor parallelism with Ulysses or ring attention"},
  };
  for (const Unsupported &u : table)
    if (u.combines(p))
      return createStringError(inconvertibleErrorCode(), u.what);
  return Error::success();
}

Expected<Plan> parsePlan(StringRef text) {
  if (sys::fs::exists(text)) {
    auto buf = MemoryBuffer::getFile(text);
    if (!buf)
      return bad("cannot read plan file '" + text + "'");
    return parsePlanJSON((*buf)->getBuffer(), text);
  }
  Plan p;
  SmallVector<StringRef> fields;
  text.split(fields, ',', -1, false);
  for (size_t i = 0; i < fields.size(); ++i) {
    auto [key, value] = fields[i].split('=');
    if (key.trim() == "tp2p5d") {
      // tp2p5d=q,d: the grid's side, then its depth in the next field.
      int64_t depth;
      if (i + 1 == fields.size() || fields[i + 1].contains('=') ||
          fields[i + 1].trim().getAsInteger(10, depth))
        return bad("plan: 'tp2p5d' takes the grid's side and its depth: tp2p5d=q,d");
      if (Error e = setField(p, "tp2d", value.trim(), "plan"))
        return std::move(e);
      if (Error e = setField(p, "depth", fields[++i].trim(), "plan"))
        return std::move(e);
      continue;
    }
    if (Error e = setField(p, key.trim(), value.trim(), "plan"))
      return std::move(e);
  }
  if (Error e = check(p, "plan"))
    return std::move(e);
  return p;
}

Expected<Plan> parsePlanJSON(StringRef text, StringRef what) {
  if (Error e = checkJsonNesting(text, what))
    return std::move(e);
  Expected<json::Value> v = json::parse(text);
  if (!v)
    return bad(what + ": invalid JSON: " + toString(v.takeError()));
  const json::Object *o = v->getAsObject();
  if (!o)
    return bad(what + ": a plan is a JSON object");
  Plan p;
  for (const auto &[key, value] : *o) {
    StringRef k = key;
    if (k == "mesh") {
      const json::Object *mesh = value.getAsObject();
      if (!mesh)
        return bad(what + ": 'mesh' must be an object {dp, tp, pp}");
      for (const auto &[axis, size] : *mesh) {
        std::optional<int64_t> n = size.getAsInteger();
        if (!n)
          return bad(what + ": mesh axis '" + StringRef(axis) + "' must be an integer");
        if (Error e = setField(p, axis, std::to_string(*n), what))
          return std::move(e);
      }
    } else if (k == "stages") {
      const json::Array *a = value.getAsArray();
      if (!a)
        return bad(what + ": 'stages' must be a list of [begin, end) layer ranges");
      for (const json::Value &r : *a) {
        const json::Array *pair = r.getAsArray();
        if (!pair || pair->size() != 2 || !(*pair)[0].getAsInteger() ||
            !(*pair)[1].getAsInteger())
          return bad(what + ": each stage must be [begin, end]");
        p.stages.push_back({*(*pair)[0].getAsInteger(), *(*pair)[1].getAsInteger()});
      }
    } else if (k == "device_memory") {
      std::optional<int64_t> bytes = value.getAsInteger();
      if (!bytes || *bytes <= 0)
        return bad(what + ": 'device_memory' must be a positive number of bytes");
      p.deviceMemory = *bytes;
    } else if (k == "global_batch" || k == "predicted") {
      continue; // derived, or informational
    } else {
      static const std::pair<const char *, const char *> keys[] = {
          {"sequence_parallel", "sp"}, {"zero", "zero"}, {"micro_batch", "mbs"},
          {"micro_batches", "micro"}, {"schedule", "schedule"},
          {"virtual_stages", "v"}, {"recompute", "recompute"}, {"offload", "offload"},
          {"ulysses", "ulysses"}, {"ring", "ring"}, {"zigzag", "zigzag"},
          {"vocab", "vocab"}, {"batch_norm", "bn"}};
      const char *field = nullptr;
      for (auto [jsonKey, f] : keys)
        if (k == jsonKey)
          field = f;
      if (!field)
        return bad(what + ": unknown key '" + k +
                   "' (mesh, sequence_parallel, vocab, ulysses, ring, zigzag, zero, micro_batch, micro_batches, "
                   "schedule, virtual_stages, recompute, offload, batch_norm, stages, device_memory)");
      std::string text;
      bool flag = k == "sequence_parallel" || k == "vocab" || k == "zigzag";
      if (auto b = value.getAsBoolean(); b && flag) text = *b ? "true" : "false";
      else if (flag)
        return bad(what + ": '" + k + "' must be true or false, got " +
                   formatv("{0}", value).str());
      else if (auto s = value.getAsString()) text = s->str();
      else if (auto i = value.getAsInteger()) text = std::to_string(*i);
      else
        return bad(what + ": '" + k + "' has the wrong type");
      if (Error e = setField(p, field, text, what))
        return std::move(e);
    }
  }
  if (Error e = check(p, what))
    return std::move(e);
  return p;
}

json::Value toJSON(const Plan &p) {
  json::Array stages;
  for (auto [b, e] : p.stages)
    stages.push_back(json::Array{b, e});
  json::Object o{
      {"mesh",
       p.tp2dDepth > 1
           ? json::Object{{"dp", p.dp}, {"tp2d", p.tp2d}, {"depth", p.tp2dDepth}, {"pp", p.pp}}
       : p.tp2d > 1 ? json::Object{{"dp", p.dp}, {"tp2d", p.tp2d}, {"pp", p.pp}}
       : p.tp3d > 1 ? json::Object{{"dp", p.dp}, {"tp3d", p.tp3d}, {"pp", p.pp}}
                    : json::Object{{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}}},
      {"sequence_parallel", p.sequenceParallel},
      {"zero", p.zero},
      {"micro_batch", p.microBatch},
      {"micro_batches", p.microBatches},
      {"global_batch", p.globalBatch()},
      {"schedule", scheduleName(p.schedule)},
      {"virtual_stages", p.virtualStages},
      {"recompute", recomputeName(p.recompute)},
      {"offload", offloadName(p.offload, p.offloadActivations)},
      {"stages", std::move(stages)},
  };
  if (p.ulysses > 1)
    o["ulysses"] = p.ulysses;
  if (p.ring > 1) {
    o["ring"] = p.ring;
    o["zigzag"] = p.zigzag;
  }
  if (p.vocabParallel)
    o["vocab"] = true;
  if (p.localBatchNorm)
    o["batch_norm"] = "local";
  if (p.deviceMemory > 0)
    o["device_memory"] = p.deviceMemory;
  return o;
}

} // namespace colo::planner

// colo cluster show NAME|FILE: a cluster preset or file, as the planner sees it.
#include "Commands.h"

#include "colo/Planner/Cluster.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace colo::tool;

namespace {
cl::SubCommand clusterCmd("cluster", "Show cluster presets and cluster files");
cl::opt<std::string> clusterAction(cl::Positional, cl::desc("show | list"),
                                   cl::Required, cl::sub(clusterCmd));
cl::opt<std::string> clusterName(cl::Positional,
                                 cl::desc("<preset[:NODESxDEVICES] | cluster.json>"),
                                 cl::sub(clusterCmd));
cl::opt<bool> clusterJson("json", cl::desc("Print JSON"), cl::sub(clusterCmd));
} // namespace

cl::SubCommand &colo::tool::clusterCommand() { return clusterCmd; }

int colo::tool::runCluster() {
  using namespace colo::planner;
  if (clusterAction == "list") {
    for (const std::string &name : clusterPresetNames())
      outs() << name << "\n";
    return 0;
  }
  if (clusterAction != "show")
    return reportError("unknown action '" + clusterAction + "' (show, list)");
  if (clusterName.empty())
    return reportError("'colo cluster show' needs a preset name or a cluster file");
  Expected<ClusterSpec> spec = resolveCluster(clusterName);
  if (!spec)
    return reportError(toString(spec.takeError()));
  if (clusterJson)
    outs() << formatv("{0:2}", toJSON(*spec)) << "\n";
  else
    printCluster(*spec, outs());
  return 0;
}

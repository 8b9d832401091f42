//===- MemoryTimeline.cpp - Device and host memory over one step, as SVG ---===//
//
// What a rank's program holds at each of its steps: the parameters, the
// optimizer's state and the inputs for the whole step, the operand scratch,
// and each temporary from the first step that touches it to the last, in
// device and in host memory; drawn over the time each step took in the
// profiled iterations (their mean), with the transfers between the spaces
// marked.
//
//===----------------------------------------------------------------------===//

#include "colo/Runtime/Files.h"
#include "colo/Runtime/Session.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

namespace colo::runtime {

namespace {
constexpr double kWidth = 960, kHeight = 300, kLeft = 70, kTop = 40, kBand = 24;

/// The parts of memory drawn, bottom up, per space.
enum Part { Parameters, Optimizer, Inputs, OperandScratch, Temporaries, NumParts };
const char *const kPartNames[] = {"parameters", "optimizer state", "inputs and constants",
                                  "operand scratch", "temporaries (activations, gradients)"};
const char *const kColors[] = {"#4e79a7", "#f28e2b", "#bab0ac", "#76b7b2", "#59a14f"};

/// `text` with XML's special characters escaped.
std::string escaped(const std::string &text) {
  std::string out;
  for (char c : text)
    out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

std::string mb(double bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f MB", bytes / 1e6);
  return s;
}
} // namespace

void Session::writeMemoryTimeline(const std::string &path) const {
  const Executable &exe = *exe_;
  const Program &program = exe.program();
  int steps = program.steps_size();
  // Each storage's first and last step.
  std::vector<int> first(exe.numBuffers(), steps), last(exe.numBuffers(), -1);
  for (int i = 0; i < steps; ++i)
    forEachBuffer(program.steps(i), [&](int32_t id) {
      int32_t s = exe.storageOf(id);
      first[s] = std::min(first[s], i);
      last[s] = std::max(last[s], i);
    });
  std::set<int32_t> parameters;
  for (const auto &[id, name] : exe.parameters())
    parameters.insert(id);
  // bytes[space][part][step]
  std::vector<std::vector<std::vector<double>>> bytes(
      2, std::vector<std::vector<double>>(NumParts, std::vector<double>(steps, 0)));
  for (int32_t id = 0; id < exe.numBuffers(); ++id) {
    if (exe.isAlias(id))
      continue;
    const Buffer &b = exe.buffer(id);
    int space = b.space() == Buffer::DEVICE ? 0 : 1;
    double size = double(exe.byteSize(id));
    Part part = b.kind() == Buffer::TEMP      ? Temporaries
                : parameters.count(id)        ? Parameters
                : b.kind() == Buffer::STATE   ? Optimizer
                                              : Inputs;
    int from = part == Temporaries ? first[id] : 0, to = part == Temporaries ? last[id] : steps - 1;
    for (int i = from; i <= to && i < steps; ++i)
      bytes[space][part][i] += size;
  }
  if (scratch_)
    for (int i = 0; i < steps; ++i)
      bytes[0][OperandScratch][i] = double(scratch_->size());

  // The x axis: the steps' mean times if profiled, else one unit each.
  std::vector<double> start(steps + 1, 0);
  for (int i = 0; i < steps; ++i)
    start[i + 1] = start[i] + (stepCalls_[i] ? stepSeconds_[i] / double(stepCalls_[i]) : 0);
  bool timed = start[steps] > 0;
  if (!timed)
    for (int i = 0; i <= steps; ++i)
      start[i] = i;
  double peak = 1;
  double peaks[2] = {0, 0};
  for (int space = 0; space < 2; ++space)
    for (int i = 0; i < steps; ++i) {
      double total = 0;
      for (int p = 0; p < NumParts; ++p)
        total += bytes[space][p][i];
      peaks[space] = std::max(peaks[space], total);
      peak = std::max(peak, total);
    }

  std::ostringstream svg;
  double plotW = kWidth - kLeft - 20, plotH = kHeight - kTop - 40;
  auto x = [&](double t) { return kLeft + plotW * t / std::max(start[steps], 1e-12); };
  auto y = [&](double b) { return kTop + plotH * (1 - b / peak); };
  int panels = peaks[1] > 0 ? 2 : 1;
  double total = kTop + panels * (plotH + 60) + kBand * NumParts + 20;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
      << total << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\">" << escaped(exe.directory())
      << ": memory over one step (" << (timed ? "mean profiled step times" : "step index")
      << ")</text>\n";
  for (int space = 0; space < panels; ++space) {
    double offset = space * (plotH + 60);
    svg << "<g transform=\"translate(0," << offset << ")\">\n";
    svg << "<text x=\"" << kLeft << "\" y=\"" << kTop - 6 << "\">"
        << (space == 0 ? "device" : "host") << " memory, peak " << mb(peaks[space])
        << "</text>\n";
    // Stacked areas, bottom up.
    std::vector<double> below(steps, 0);
    for (int p = 0; p < NumParts; ++p) {
      std::ostringstream points;
      for (int i = 0; i < steps; ++i)
        points << x(start[i]) << "," << y(below[i] + bytes[space][p][i]) << " "
               << x(start[i + 1]) << "," << y(below[i] + bytes[space][p][i]) << " ";
      for (int i = steps - 1; i >= 0; --i)
        points << x(start[i + 1]) << "," << y(below[i]) << " " << x(start[i]) << ","
               << y(below[i]) << " ";
      svg << "<polygon fill=\"" << kColors[p] << "\" stroke=\"none\" points=\"" << points.str()
          << "\"/>\n";
      for (int i = 0; i < steps; ++i)
        below[i] += bytes[space][p][i];
    }
    // Transfers between the spaces: ticks above the plot.
    for (int i = 0; i < steps; ++i)
      if (program.steps(i).has_transfer())
        svg << "<line x1=\"" << x(start[i]) << "\" x2=\"" << x(start[i]) << "\" y1=\""
            << kTop - 2 << "\" y2=\"" << kTop + 6 << "\" stroke=\"#e15759\"/>\n";
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << y(0) << "\" x2=\"" << kLeft + plotW
        << "\" y2=\"" << y(0) << "\" stroke=\"black\"/>\n<text x=\"4\" y=\"" << y(peak) + 4
        << "\">" << mb(peak) << "</text>\n<text x=\"4\" y=\"" << y(0) << "\">0</text>\n";
    svg << "<text x=\"" << kLeft + plotW << "\" y=\"" << y(0) + 16 << "\" text-anchor=\"end\">"
        << (timed ? std::to_string(int(start[steps] * 1e3)) + " ms"
                  : std::to_string(steps) + " steps")
        << "</text>\n</g>\n";
  }
  double legend = kTop + panels * (plotH + 60);
  for (int p = 0; p < NumParts; ++p)
    svg << "<rect x=\"" << kLeft << "\" y=\"" << legend + p * kBand << "\" width=\"14\" "
        << "height=\"14\" fill=\"" << kColors[p] << "\"/><text x=\"" << kLeft + 20 << "\" y=\""
        << legend + p * kBand + 12 << "\">" << kPartNames[p] << "</text>\n";
  svg << "<line x1=\"" << kLeft + 320 << "\" x2=\"" << kLeft + 320 << "\" y1=\"" << legend
      << "\" y2=\"" << legend + 14 << "\" stroke=\"#e15759\"/><text x=\"" << kLeft + 328
      << "\" y=\"" << legend + 12 << "\">a transfer between device and host starts</text>\n";
  svg << "</svg>\n";
  writeFileAtomically(path, [&](std::ostream &out) { out << svg.str(); });
}

} // namespace colo::runtime

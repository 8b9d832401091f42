//===- MemoryTimeline.cpp - Device and host memory over one step, as SVG ---===//
//
// What a rank's program holds at each of its steps: the parameters, the
// optimizer's state and the inputs for the whole step, the operand scratch,
// and each temporary from the first step that touches it to the last, in
// device and in host memory; drawn over the time each step took (measured)
// and the time the cost model gives it (predicted), with the transfers
// between the spaces and the recomputed steps marked.
//
//===----------------------------------------------------------------------===//

#include "colo/Runtime/MemoryTimeline.h"
#include "colo/Runtime/DType.h"
#include "colo/Runtime/Executable.h"
#include "colo/Runtime/Files.h"

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

/// The events marked above the plot.
enum Mark { ToHost, ToDevice, Recomputed, NumMarks };
const char *const kMarkNames[] = {"a transfer to the host starts (offload)",
                                  "a transfer to the device starts (fetch, prefetch)",
                                  "a recomputed step"};
const char *const kMarkColors[] = {"#e15759", "#4e79a7", "#b07aa1"};

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

std::string ms(double seconds) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f ms", seconds * 1e3);
  return s;
}

/// Where each step starts, from the seconds each takes (one unit each if
/// there are none).
std::vector<double> starts(const std::vector<double> &seconds, int steps) {
  std::vector<double> start(steps + 1, 0);
  for (int i = 0; i < steps; ++i)
    start[i + 1] = start[i] + (seconds.empty() ? 1.0 : seconds[i]);
  return start;
}

/// bytes[space][part][step]: what the program holds while each step runs.
using Held = std::vector<std::vector<std::vector<double>>>;

Held heldBytes(const Program &program, int64_t scratchBytes) {
  int steps = program.steps_size(), n = program.buffers_size();
  std::vector<int32_t> storage(n);
  for (int32_t id = 0; id < n; ++id) {
    int32_t s = id;
    for (int hops = 0; program.buffers(s).has_alias_of() && hops < n; ++hops)
      s = program.buffers(s).alias_of();
    storage[id] = s;
  }
  std::vector<int> first(n, steps), last(n, -1);
  for (int i = 0; i < steps; ++i)
    forEachBuffer(program.steps(i), [&](int32_t id) {
      if (id < 0 || id >= n)
        return;
      int32_t s = storage[id];
      first[s] = std::min(first[s], i);
      last[s] = std::max(last[s], i);
    });
  std::set<std::string> parameters;
  for (const auto &[name, torchName] : program.param_names())
    parameters.insert(name);
  Held bytes(2, std::vector<std::vector<double>>(NumParts, std::vector<double>(steps, 0)));
  for (int32_t id = 0; id < n; ++id) {
    const Buffer &b = program.buffers(id);
    if (storage[id] != id)
      continue;
    double size = double(dtypeSize(b.dtype()));
    for (int64_t d : b.shape())
      size *= double(d);
    int space = b.space() == Buffer::DEVICE ? 0 : 1;
    Part part = b.kind() == Buffer::TEMP        ? Temporaries
                : parameters.count(b.name())    ? Parameters
                : b.kind() == Buffer::STATE     ? Optimizer
                                                : Inputs;
    int from = part == Temporaries ? first[id] : 0;
    int to = part == Temporaries ? last[id] : steps - 1;
    for (int i = std::max(from, 0); i <= to && i < steps; ++i)
      bytes[space][part][i] += size;
  }
  for (int i = 0; i < steps; ++i)
    bytes[0][OperandScratch][i] = double(scratchBytes);
  return bytes;
}

/// Which mark step `s` gets, if any.
int markOf(const Program &program, const Step &s) {
  if (s.has_transfer()) {
    int32_t dst = s.transfer().dst();
    bool toHost = dst >= 0 && dst < program.buffers_size() &&
                  program.buffers(dst).space() != Buffer::DEVICE;
    return toHost ? ToHost : ToDevice;
  }
  return s.recomputed() ? Recomputed : NumMarks;
}
} // namespace

void writeMemoryTimeline(const TimelineInput &in, const std::string &path) {
  const Program &program = *in.program;
  int steps = program.steps_size();
  Held bytes = heldBytes(program, in.scratchBytes);
  bool measured = !in.measured.empty(), predicted = !in.predicted.empty();
  // The areas go over the measured times, else the predicted ones; the
  // predicted total is a line on the same axes when both are given.
  std::vector<double> start = starts(measured ? in.measured : in.predicted, steps);
  std::vector<double> predictedStart = starts(in.predicted, steps);
  bool timed = measured || predicted;
  double span = std::max(start[steps], measured && predicted ? predictedStart[steps] : 0.0);

  std::vector<std::vector<double>> total(2, std::vector<double>(steps, 0));
  double peak = 1, peaks[2] = {0, 0};
  for (int space = 0; space < 2; ++space)
    for (int i = 0; i < steps; ++i) {
      for (int p = 0; p < NumParts; ++p)
        total[space][i] += bytes[space][p][i];
      peaks[space] = std::max(peaks[space], total[space][i]);
      peak = std::max(peak, total[space][i]);
    }

  std::ostringstream svg;
  double plotW = kWidth - kLeft - 20, plotH = kHeight - kTop - 40;
  auto x = [&](double t) { return kLeft + plotW * t / std::max(span, 1e-12); };
  auto y = [&](double b) { return kTop + plotH * (1 - b / peak); };
  int panels = peaks[1] > 0 ? 2 : 1;
  int legendRows = NumParts + NumMarks + (measured && predicted ? 1 : 0);
  double height = kTop + panels * (plotH + 60) + kBand * legendRows + 20;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\""
      << height << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  std::string axis = measured && predicted ? "measured " + ms(start[steps]) + ", predicted " +
                                                 ms(predictedStart[steps])
                     : measured            ? "measured " + ms(start[steps])
                     : predicted           ? "predicted " + ms(start[steps])
                                           : "step index";
  svg << "<text x=\"" << kLeft << "\" y=\"20\" font-size=\"14\">" << escaped(in.title)
      << ": memory over one step (" << axis << ")</text>\n";
  for (int space = 0; space < panels; ++space) {
    double offset = space * (plotH + 60);
    svg << "<g transform=\"translate(0," << offset << ")\">\n";
    svg << "<text x=\"" << kLeft << "\" y=\"" << kTop - 14 << "\">"
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
    if (measured && predicted) {
      std::ostringstream line;
      for (int i = 0; i < steps; ++i)
        line << x(predictedStart[i]) << "," << y(total[space][i]) << " "
             << x(predictedStart[i + 1]) << "," << y(total[space][i]) << " ";
      svg << "<polyline class=\"predicted\" fill=\"none\" stroke=\"black\" "
          << "stroke-dasharray=\"4 3\" points=\"" << line.str() << "\"/>\n";
    }
    // Events: ticks above the plot, one row per kind.
    for (int i = 0; i < steps; ++i)
      if (int mark = markOf(program, program.steps(i)); mark != NumMarks)
        svg << "<line class=\"mark" << mark << "\" x1=\"" << x(start[i]) << "\" x2=\""
            << x(start[i]) << "\" y1=\"" << kTop - 10 + 3 * mark << "\" y2=\""
            << kTop - 4 + 3 * mark << "\" stroke=\"" << kMarkColors[mark] << "\"/>\n";
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << y(0) << "\" x2=\"" << kLeft + plotW
        << "\" y2=\"" << y(0) << "\" stroke=\"black\"/>\n<text x=\"4\" y=\"" << y(peak) + 4
        << "\">" << mb(peak) << "</text>\n<text x=\"4\" y=\"" << y(0) << "\">0</text>\n";
    svg << "<text x=\"" << kLeft + plotW << "\" y=\"" << y(0) + 16 << "\" text-anchor=\"end\">"
        << (timed ? ms(span) : std::to_string(steps) + " steps") << "</text>\n</g>\n";
  }
  double legend = kTop + panels * (plotH + 60);
  int row = 0;
  for (int p = 0; p < NumParts; ++p, ++row)
    svg << "<rect x=\"" << kLeft << "\" y=\"" << legend + row * kBand << "\" width=\"14\" "
        << "height=\"14\" fill=\"" << kColors[p] << "\"/><text x=\"" << kLeft + 20 << "\" y=\""
        << legend + row * kBand + 12 << "\">" << kPartNames[p] << "</text>\n";
  for (int m = 0; m < NumMarks; ++m, ++row)
    svg << "<line x1=\"" << kLeft + 7 << "\" x2=\"" << kLeft + 7 << "\" y1=\""
        << legend + row * kBand << "\" y2=\"" << legend + row * kBand + 14 << "\" stroke=\""
        << kMarkColors[m] << "\"/><text x=\"" << kLeft + 20 << "\" y=\""
        << legend + row * kBand + 12 << "\">" << kMarkNames[m] << "</text>\n";
  if (measured && predicted)
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + 14 << "\" y1=\""
        << legend + row * kBand + 7 << "\" y2=\"" << legend + row * kBand + 7
        << "\" stroke=\"black\" stroke-dasharray=\"4 3\"/><text x=\"" << kLeft + 20
        << "\" y=\"" << legend + row * kBand + 12
        << "\">the same memory over the predicted step times (the cost model on this "
           "program)</text>\n";
  svg << "</svg>\n";
  writeFileAtomically(path, [&](std::ostream &out) { out << svg.str(); });
}

} // namespace colo::runtime

// Einsum as the ops it stands for (ONNX Einsum, aten::einsum): each operand's
// own letters summed away, then operands taken pairwise into one batched
// colo.matmul of [batch, free, contracted] by [batch, contracted, free],
// then the result transposed into the equation's order. A letter repeated
// within one operand first takes the operand's diagonal.
#include "ImportBase.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace colo {
namespace {
/// An operand's value and the letter of each of its dimensions.
struct Term {
  Value value;
  std::string letters;
};
} // namespace

FailureOr<Value> ImportBase::einsum(llvm::StringRef equation, ArrayRef<Value> operands) {
  std::string eq;
  for (char c : equation)
    if (c != ' ')
      eq.push_back(c);
  auto [lhs, rhs] = StringRef(eq).split("->");
  bool explicitOut = StringRef(eq).contains("->");
  SmallVector<StringRef> inputs;
  lhs.split(inputs, ',');
  if (inputs.size() != operands.size())
    return fail("the equation has " + std::to_string(inputs.size()) + " operands, given " +
                std::to_string(operands.size()));
  // "..." becomes capital letters, one per dimension it covers, aligned
  // from the right as NumPy broadcasting aligns them.
  int64_t ellipsisRank = 0;
  std::vector<Term> terms;
  std::string written; // every operand's letters, repeats included

  for (auto [spec, operand] : llvm::zip(inputs, operands)) {
    Value v = operand;
    auto type = cast<RankedTensorType>(v.getType());
    std::string letters = spec.str();
    if (size_t at = letters.find("..."); at != std::string::npos) {
      int64_t n = type.getRank() - static_cast<int64_t>(letters.size() - 3);
      if (n < 0)
        return fail("the equation names more dimensions than an operand has");
      ellipsisRank = std::max(ellipsisRank, n);
      std::string dims;
      for (int64_t i = 0; i < n; ++i)
        dims.push_back('A' + static_cast<char>(ellipsisRank - n + i));
      letters.replace(at, 3, dims);
    }
    if (static_cast<int64_t>(letters.size()) != type.getRank())
      return fail("operand '" + spec.str() + "' does not match a rank-" +
                  std::to_string(type.getRank()) + " tensor");
    written += letters;
    // A letter repeated within one operand takes its diagonal: one gather of
    // the flat operand at offsets computed now.
    std::string unique;
    for (char c : letters)
      if (unique.find(c) == std::string::npos)
        unique.push_back(c);
    if (unique.size() != letters.size()) {
      SmallVector<int64_t> shape;
      for (char c : unique)
        shape.push_back(type.getDimSize(letters.find(c)));
      for (auto [d, c] : llvm::enumerate(letters))
        if (type.getDimSize(d) != shape[unique.find(c)])
          return fail("index '" + std::string(1, c) + "' spans dimensions of different sizes");
      SmallVector<int64_t> strides = onnx_import::stridesOf(type.getShape()),
                           diagonalStrides = onnx_import::stridesOf(shape);
      onnx_import::HostTensor offsets{onnx_import::kInt64, shape, {}};
      for (int64_t i = 0, n = offsets.numel(); i < n; ++i) {
        int64_t offset = 0;
        for (auto [d, c] : llvm::enumerate(letters)) {
          size_t u = unique.find(c);
          offset += ((i / diagonalStrides[u]) % shape[u]) * strides[d];
        }
        offsets.values.push_back(offset);
      }
      FailureOr<Value> diagonal = gatherFlat(v, offsets);
      if (failed(diagonal))
        return failure();
      v = *diagonal;
      letters = unique;
    }
    terms.push_back({v, letters});
  }
  std::string out;
  if (explicitOut) {
    out = rhs.str();
    if (size_t at = out.find("..."); at != std::string::npos) {
      std::string dims;
      for (int64_t i = 0; i < ellipsisRank; ++i)
        dims.push_back('A' + static_cast<char>(i));
      out.replace(at, 3, dims);
    }
  } else {
    // Implicit: the ellipsis dimensions, then the letters that appear once,
    // alphabetically.
    for (int64_t i = 0; i < ellipsisRank; ++i)
      out.push_back('A' + static_cast<char>(i));
    for (char c = 'a'; c <= 'z'; ++c)
      if (llvm::count(written, c) == 1)
        out.push_back(c);
  }

  auto sizeOf = [](const Term &t, char c) {
    return cast<RankedTensorType>(t.value.getType()).getDimSize(t.letters.find(c));
  };
  auto transposeTo = [&](Term &t, const std::string &order) -> LogicalResult {
    if (t.letters == order)
      return success();
    SmallVector<int64_t> perm;
    for (char c : order)
      perm.push_back(t.letters.find(c));
    FailureOr<TransposeOp> op = create<TransposeOp>(t.value, builder.getDenseI64ArrayAttr(perm));
    if (failed(op))
      return failure();
    t = {op->getResult(), order};
    return success();
  };
  auto reshapeTo = [&](Term &t, ArrayRef<int64_t> shape, std::string letters) -> LogicalResult {
    auto type = cast<RankedTensorType>(t.value.getType());
    FailureOr<ReshapeOp> op = createTyped<ReshapeOp>(type.clone(shape), t.value);
    if (failed(op))
      return failure();
    t = {op->getResult(), std::move(letters)};
    return success();
  };
  // Letters still needed after term `i`: the output's and later terms'.
  auto neededAfter = [&](size_t i) {
    std::string need = out;
    for (size_t j = i + 1; j < terms.size(); ++j)
      need += terms[j].letters;
    return need;
  };
  // Sums away the letters of `t` that nothing else needs.
  auto sumAway = [&](Term &t, const std::string &need) -> LogicalResult {
    SmallVector<int64_t> dims;
    std::string kept;
    for (auto [d, c] : llvm::enumerate(t.letters)) {
      if (need.find(c) == std::string::npos)
        dims.push_back(d);
      else
        kept.push_back(c);
    }
    if (dims.empty())
      return success();
    FailureOr<ReduceSumOp> op =
        create<ReduceSumOp>(t.value, builder.getDenseI64ArrayAttr(dims), UnitAttr());
    if (failed(op))
      return failure();
    t = {op->getResult(), kept};
    return success();
  };

  Term acc = terms[0];
  if (failed(sumAway(acc, neededAfter(0))))
    return failure();
  for (size_t i = 1; i < terms.size(); ++i) {
    Term b = terms[i];
    std::string need = neededAfter(i);
    std::string bNeed = need + acc.letters;
    if (failed(sumAway(b, bNeed)))
      return failure();
    std::string batch, freeA, freeB, contracted;
    for (char c : acc.letters) {
      bool inB = b.letters.find(c) != std::string::npos;
      bool kept = need.find(c) != std::string::npos;
      (inB ? (kept ? batch : contracted) : freeA).push_back(c);
    }
    for (char c : b.letters)
      if (acc.letters.find(c) == std::string::npos)
        freeB.push_back(c);
    for (char c : batch + contracted)
      if (sizeOf(acc, c) != sizeOf(b, c))
        return fail(std::string("index '") + c + "' has different sizes in two operands");
    auto product = [&](const Term &t, const std::string &cs) {
      int64_t n = 1;
      for (char c : cs)
        n *= sizeOf(t, c);
      return n;
    };
    SmallVector<int64_t> outShape;
    for (char c : batch + freeA)
      outShape.push_back(sizeOf(acc, c));
    for (char c : freeB)
      outShape.push_back(sizeOf(b, c));
    int64_t nb = product(acc, batch), m = product(acc, freeA), k = product(acc, contracted),
            n = product(b, freeB);
    if (failed(transposeTo(acc, batch + freeA + contracted)) ||
        failed(transposeTo(b, batch + contracted + freeB)) ||
        failed(reshapeTo(acc, {nb, m, k}, "")) || failed(reshapeTo(b, {nb, k, n}, "")))
      return failure();
    FailureOr<MatmulOp> mm = create<MatmulOp>(acc.value, b.value);
    if (failed(mm))
      return failure();
    acc = {mm->getResult(), ""};
    if (failed(reshapeTo(acc, outShape, batch + freeA + freeB)))
      return failure();
  }
  if (failed(sumAway(acc, out)))
    return failure();
  for (char c : out)
    if (acc.letters.find(c) == std::string::npos)
      return fail(std::string("output index '") + c + "' is in no operand");
  if (failed(transposeTo(acc, out)))
    return failure();
  return acc.value;
}

} // namespace colo

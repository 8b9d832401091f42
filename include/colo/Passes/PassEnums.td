//===- PassEnums.td - The fixed choices of colo's pass options -*- tablegen -*-===//
//
// Options with a fixed set of values are enums (with generated
// symbolize/stringify functions), so that a pass compares cases, not strings,
// and llvm::cl rejects anything else when the options are parsed.
//
//===----------------------------------------------------------------------===//

#ifndef COLO_PASS_ENUMS
#define COLO_PASS_ENUMS

include "mlir/IR/EnumAttr.td"

class Colo_PassEnum<string name, string summary, list<EnumCase> cases>
    : I32Enum<name, summary, cases> {
  let cppNamespace = "::colo";
}

def Colo_Loss : Colo_PassEnum<"Loss", "loss", [
    I32EnumCase<"CrossEntropy", 0, "cross-entropy">,
    I32EnumCase<"Lm", 1, "lm">,
    I32EnumCase<"Mse", 2, "mse">,
    I32EnumCase<"Output", 3, "output">]>;

def Colo_Optimizer : Colo_PassEnum<"Optimizer", "optimizer", [
    I32EnumCase<"Sgd", 0, "sgd">,
    I32EnumCase<"Adam", 1, "adam">,
    I32EnumCase<"AdamW", 2, "adamw">,
    I32EnumCase<"Lamb", 3, "lamb">,
    I32EnumCase<"Lars", 4, "lars">]>;

def Colo_LrSchedule : Colo_PassEnum<"LrSchedule", "schedule", [
    I32EnumCase<"Constant", 0, "constant">,
    I32EnumCase<"Cosine", 1, "cosine">]>;

def Colo_PipelineSchedule : Colo_PassEnum<"PipelineSchedule", "pipeline schedule", [
    I32EnumCase<"GPipe", 0, "gpipe">,
    I32EnumCase<"OneFOneB", 1, "1f1b">,
    I32EnumCase<"Interleaved", 2, "interleaved">,
    I32EnumCase<"ZeroBubbleH1", 3, "zb-h1">]>;

def Colo_RecomputePolicy : Colo_PassEnum<"RecomputePolicy", "recompute policy", [
    I32EnumCase<"None", 0, "none">,
    I32EnumCase<"Selective", 1, "selective">,
    I32EnumCase<"Full", 2, "full">,
    I32EnumCase<"Budget", 3, "budget">]>;

def Colo_Precision : Colo_PassEnum<"Precision", "precision", [
    I32EnumCase<"Fp32", 0, "fp32">,
    I32EnumCase<"Bf16", 1, "bf16">,
    I32EnumCase<"Fp16", 2, "fp16">]>;

#endif // COLO_PASS_ENUMS

// parseTrainStepOptions: `--train`'s text into the typed options the
// train-step pipeline takes.
#include "colo/Passes/Passes.h"

#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

namespace {

colo::TrainStepOptions parse(llvm::StringRef text) {
  std::string errors;
  llvm::raw_string_ostream es(errors);
  mlir::FailureOr<colo::TrainStepOptions> options = colo::parseTrainStepOptions(text, es);
  EXPECT_TRUE(succeeded(options)) << errors;
  return succeeded(options) ? *options : colo::TrainStepOptions();
}

std::string error(llvm::StringRef text) {
  std::string errors;
  llvm::raw_string_ostream es(errors);
  EXPECT_TRUE(failed(colo::parseTrainStepOptions(text, es))) << text.str();
  return errors;
}

TEST(TrainStepOptions, CommasOrSpacesAndThePassesDefaults) {
  colo::TrainStepOptions o = parse("loss=lm,optimizer=sgd lr=3e-4,momentum=0.9");
  EXPECT_EQ(o.step.loss, colo::Loss::Lm);
  EXPECT_EQ(o.step.optimizer, colo::Optimizer::Sgd);
  EXPECT_DOUBLE_EQ(o.step.lr, 3e-4);
  EXPECT_DOUBLE_EQ(o.step.momentum, 0.9);
  EXPECT_EQ(o.precision, colo::Precision::Fp32);
  EXPECT_EQ(o.step.schedule, colo::LrSchedule::Constant);
  EXPECT_EQ(o.step.lossScale, "none");
  EXPECT_EQ(o.step.scaleWindow, 2000);
}

TEST(TrainStepOptions, Fp16GetsDynamicLossScalingUnlessOneIsGiven) {
  EXPECT_EQ(parse("precision=fp16").step.lossScale, "dynamic");
  EXPECT_EQ(parse("precision=fp16,loss-scale=none").step.lossScale, "none");
  EXPECT_EQ(parse("precision=fp16,loss-scale=1024").step.lossScale, "1024");
  colo::TrainStepOptions bf16 = parse("precision=bf16");
  EXPECT_EQ(bf16.precision, colo::Precision::Bf16);
  EXPECT_EQ(bf16.step.lossScale, "none");
}

TEST(TrainStepOptions, BadOptionsAreNamed) {
  EXPECT_EQ(error("loss=lm,precision=fp8"),
            "unknown precision 'fp8' (expected fp32, bf16 or fp16)");
  EXPECT_EQ(error("optimizer=adagrad"),
            "unknown optimizer 'adagrad' (expected sgd, adam, adamw, lamb or lars)");
  EXPECT_EQ(error("loss=hinge"), "unknown loss 'hinge' (expected cross-entropy, lm, mse or output)");
  EXPECT_EQ(error("schedule=linear"), "unknown schedule 'linear' (expected constant or cosine)");
  EXPECT_EQ(error("loss=lm,colour=blue"), "no such option colour");
  EXPECT_NE(error("lr=fast").find("cannot read 'lr=fast'"), std::string::npos);
}

} // namespace

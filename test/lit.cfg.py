import os

import lit.formats
from lit.llvm import llvm_config

config.name = "colo"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["e2e", "unit", "Inputs", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.colo_obj_root, "test")

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.colo_tools_dir, append_path=True)
config.substitutions.append(("%colo_python", config.python_executable))
llvm_config.add_tool_substitutions(["colo-opt", "colo"], [config.colo_tools_dir])

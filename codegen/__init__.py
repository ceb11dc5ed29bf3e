"""IR -> native code: LLVM IR through llvmlite for the CPU, PTX for NVIDIA GPUs, and the compile cache."""

#pragma once
// Included by the dataset sources that do floating-point arithmetic: a seed must give byte-identical
// files everywhere, so a * b + c must not be fused into one FMA on some targets and not on others.
// GCC already keeps them apart in ISO mode (-std=c++17 implies -ffp-contract=off); Clang fuses within
// an expression by default where the target has FMA (e.g. AArch64), so turn that off for this file.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

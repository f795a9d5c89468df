#pragma once
// A gate in front of LibTorch's unpickler. LibTorch 1.13 trusts its input: a damaged data.pkl can make it
// pop an empty stack (REDUCE reads below the stack's start), use a missing mark, or size its memo from a
// 4-byte index (tens of GB), i.e. crash or exhaust memory instead of throwing. Before LibTorch sees the
// pickle, this walks its opcodes and simulates the stack depth, the marks and the memo, accepting only what
// torch.save writes for a tuple or list of tensors. No LibTorch here.
#include <string>

namespace shardplan::torchio {

// Throws InputError (naming `source`) unless `pickle` is a well-formed program over the opcodes and globals
// of a saved tuple/list of tensors: protocol 2 opcodes for tuples, lists, ints, strings, booleans, None,
// memo puts/gets, persistent ids and REDUCE of torch._utils._rebuild_tensor_v2, torch.*Storage and
// collections.OrderedDict.
void check_tensor_pickle(const std::string& pickle, const std::string& source);

}  // namespace shardplan::torchio

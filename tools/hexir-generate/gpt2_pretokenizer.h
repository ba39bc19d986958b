// GPT-2's pre-tokenizer: splits text into the words byte-level BPE merges within, by the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// evaluated the way llama.cpp's "gpt-2" pre-tokenizer does (first alternative that matches
// at each position; a whitespace run followed by text leaves its last character to the next
// word; an unassigned code point matches nothing and becomes a word of its own). Each word
// is returned with its UTF-8 bytes mapped through GPT-2's byte -> code point map
// (unicode.h), which is the form BPE merges and vocabulary entries are written in.
// Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace hexir::tools {

std::vector<std::string> Gpt2PreTokenize(std::string_view text);

}  // namespace hexir::tools

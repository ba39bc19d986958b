// The few Unicode facts the tokenizers need: UTF-8 decoding as llama.cpp does it, the
// general-category classes of the GPT-2 pre-tokenizer (letter, number, other; unassigned
// code points are none of them), the White_Space property, and GPT-2's byte <-> code point
// map (every byte gets a printable code point, so byte-level BPE works on text).
// Tables are constant; every function is pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hexir::tools {

enum class UnicodeClass : uint8_t { kUnassigned, kLetter, kNumber, kOther };

UnicodeClass ClassOf(uint32_t cp);
bool IsWhitespace(uint32_t cp);  // the White_Space property (\s in the pre-tokenizer regex)

// Bytes of the UTF-8 sequence a lead byte starts (1 for continuation and invalid bytes).
size_t Utf8SequenceLength(uint8_t lead);
// Code points of `text`; a malformed sequence becomes U+FFFD and consumes one byte.
std::vector<uint32_t> DecodeUtf8(std::string_view text);
void AppendUtf8(uint32_t cp, std::string* out);

// GPT-2's map: printable Latin-1 bytes (33-126, 161-172, 174-255) map to themselves, the
// other 68 bytes to 256, 257, ... in byte order.
uint32_t ByteToCodePoint(uint8_t byte);
int CodePointToByte(uint32_t cp);  // -1 when `cp` is no byte's image

}  // namespace hexir::tools

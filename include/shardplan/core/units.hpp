#pragma once
// Byte sizes on the command line and in reports.
#include <cstdint>
#include <string>
#include <string_view>

namespace shardplan {

// Parses "17179869184", "16GiB", "80GB", "512MiB", "1.5 TiB" (units B, KB, MB, GB, TB decimal;
// KiB, MiB, GiB, TiB binary; case-insensitive). Throws InputError naming `what` and the text.
int64_t parse_byte_size(std::string_view text, std::string_view what);

// "3.50 GiB", "512.00 MiB", "100 B".
std::string format_bytes(int64_t bytes);
// Totals summed past int64 (thousands of huge tables) are formatted without converting back.
std::string format_byte_total(long double bytes);

}  // namespace shardplan

// An Advice for people (a table) and for scripts (one JSON object).
//
//   std::cout << arenarpc::advise::FormatTable(advice);
//   std::cout << arenarpc::advise::FormatJson(advice) << "\n";
//
// JSON keys: type, protobuf, code, samples, wire_bytes_mean,
// allocs_per_message, alloc_bytes_per_message, modes.{heap,arena,reuse}.
// {parse_destroy_us, cpu_us_per_call, saving_us, saving_share}, auto,
// recommended, reason, base_us, base_from, reuse_limit, warnings.
// Key order is not specified.
//
// Thread safety: plain functions.
#ifndef ARENARPC_TOOLS_ADVISE_REPORT_H_
#define ARENARPC_TOOLS_ADVISE_REPORT_H_

#include <string>

#include "advise.h"

namespace arenarpc::advise {

std::string FormatTable(const Advice& advice);
std::string FormatJson(const Advice& advice);

}  // namespace arenarpc::advise

#endif  // ARENARPC_TOOLS_ADVISE_REPORT_H_

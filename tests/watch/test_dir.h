// A fresh directory per test, under the build tree (a real disk: /proc/PID/io counts its writes,
// which it does not on tmpfs), removed afterwards.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace ww::testing {

class TestDirFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(WW_BINARY).parent_path() / "test_tmp" /
           (std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

}  // namespace ww::testing

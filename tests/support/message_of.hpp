#pragma once
// The message of the error a piece of code throws, for tests that check what a user is told.
#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace shardplan::testing {

// What `run` throws as an `Error`; a test failure (and "") when it throws nothing.
template <typename Error>
std::string message_of(const std::function<void()>& run) {
  try {
    run();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

}  // namespace shardplan::testing

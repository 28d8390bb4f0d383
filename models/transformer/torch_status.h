// CatchTorchErrors: the boundary where LibTorch exceptions become Status values.
//
// Every call into LibTorch that can throw (shape mismatches, allocation failures, a device that is
// not there) runs inside CatchTorchErrors, so that nothing above models/transformer sees an
// exception. c10::Error messages are reported without their C++ backtrace. Thread-safe.
#pragma once

#include <c10/util/Exception.h>

#include <exception>
#include <string>
#include <type_traits>

#include "common/status.h"

namespace geotrain::models {

// Runs `body` and returns its value, or INTERNAL "<context>: <LibTorch message>" if it throws.
template <typename Body>
auto CatchTorchErrors(const std::string& context, Body&& body)
    -> StatusOr<std::invoke_result_t<Body>> {
  try {
    return body();
  } catch (const c10::Error& e) {
    return Internal(context + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Internal(context + ": " + e.what());
  }
}

}  // namespace geotrain::models

// A minimal PNG decoder for the browser test's screenshots: 8-bit RGB or RGBA, non-interlaced
// (what Chromium writes), inflated with zlib. Anything else is an error, not a guess.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ww::testing {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3
  const uint8_t* At(int x, int y) const {
    return &rgb[(static_cast<size_t>(y) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 3];
  }
};

Result<RgbImage> DecodePng(const std::string& bytes);

}  // namespace ww::testing

// The SentencePiece backend of a build without libsentencepiece (the portable tarball, `make
// dist`): Debian ships the library shared only, and the tarball's binary links nothing but glibc.
// A tokenizer.model is recognized and refused with what to use instead.
#include <fmt/format.h>

#include "tokenizer/sentencepiece_backend.h"

namespace ww {

Result<std::unique_ptr<Tokenizer>> LoadSentencePiece(std::string_view /*model_bytes*/,
                                                     const std::string& source_name) {
  return Status::Unavailable(fmt::format(
      "{} is a SentencePiece model, and this wattwatch is the portable build, which carries no "
      "SentencePiece library: give the model's tokenizer.json instead, or use the .deb or a "
      "source build (README, Install)",
      source_name));
}

}  // namespace ww

# The third-party libraries, found once, as ww:: targets every module links. Two ways:
#
#  - default: Debian's shared libraries (libfmt9, libspdlog1.10, libyaml-cpp0.7, libcpp-httplib0.11,
#    ...): the build tree, the .deb (dpkg-shlibdeps turns them into Depends).
#  - WATTWATCH_PORTABLE=ON (`make dist`): everything but glibc linked into the binary, so it runs
#    on a node that has none of those packages. Static archives from the same -dev packages where
#    Debian ships one (yaml-cpp, PCRE2, zstd, zlib, utf8proc, OpenSSL, brotli); fmt and spdlog,
#    which Debian ships shared only, compiled in from their headers (fmt's and spdlog's own
#    header-only modes); cpp-httplib, shared only and installed as split declarations, compiled
#    in from the full single header of the same Debian source package (scripts/dist-sources.sh
#    fetches it by name with apt); libstdc++ and libgcc static. SentencePiece (shared only, a C++
#    API) is left out: `tokenize` on a tokenizer.model says so (tokenizer.json works).
option(WATTWATCH_PORTABLE "Link everything but glibc statically (make dist)" OFF)
set(WATTWATCH_DIST_SOURCES "${CMAKE_SOURCE_DIR}/build/dist-src" CACHE PATH
    "Where scripts/dist-sources.sh extracted the Debian sources the portable build needs")

find_package(CLI11 REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
find_package(ZLIB REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET GLOBAL libpcre2-8)
pkg_check_modules(ZSTD REQUIRED IMPORTED_TARGET GLOBAL libzstd)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET GLOBAL libutf8proc)

foreach(dep fmt spdlog yaml pcre2 zstd zlib utf8proc httplib sentencepiece)
  add_library(ww_dep_${dep} INTERFACE)
  add_library(ww::${dep} ALIAS ww_dep_${dep})
endforeach()

if(NOT WATTWATCH_PORTABLE)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
  pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET GLOBAL sentencepiece)
  target_link_libraries(ww_dep_fmt INTERFACE fmt::fmt)
  target_link_libraries(ww_dep_spdlog INTERFACE spdlog::spdlog)
  target_link_libraries(ww_dep_yaml INTERFACE yaml-cpp)
  target_link_libraries(ww_dep_pcre2 INTERFACE PkgConfig::PCRE2)
  target_link_libraries(ww_dep_zstd INTERFACE PkgConfig::ZSTD)
  target_link_libraries(ww_dep_zlib INTERFACE ZLIB::ZLIB)
  target_link_libraries(ww_dep_utf8proc INTERFACE PkgConfig::UTF8PROC)
  target_link_libraries(ww_dep_httplib INTERFACE PkgConfig::HTTPLIB)
  target_link_libraries(ww_dep_sentencepiece INTERFACE PkgConfig::SENTENCEPIECE)
  set(WW_HAVE_SENTENCEPIECE ON)
  return()
endif()

# The static archive `file` (libyaml-cpp.a, ...) of an installed -dev package, or a clear error.
function(ww_static_archive out file package)
  find_library(${out} NAMES ${file} NO_CACHE)
  if(NOT ${out})
    message(FATAL_ERROR "WATTWATCH_PORTABLE: ${file} not found; install ${package}")
  endif()
  set(${out} ${${out}} PARENT_SCOPE)
endfunction()

ww_static_archive(WW_YAML_A libyaml-cpp.a libyaml-cpp-dev)
ww_static_archive(WW_PCRE2_A libpcre2-8.a libpcre2-dev)
ww_static_archive(WW_ZSTD_A libzstd.a libzstd-dev)
ww_static_archive(WW_Z_A libz.a zlib1g-dev)
ww_static_archive(WW_UTF8PROC_A libutf8proc.a libutf8proc-dev)
ww_static_archive(WW_SSL_A libssl.a libssl-dev)
ww_static_archive(WW_CRYPTO_A libcrypto.a libssl-dev)
ww_static_archive(WW_BROTLIENC_A libbrotlienc.a libbrotli-dev)
ww_static_archive(WW_BROTLIDEC_A libbrotlidec.a libbrotli-dev)
ww_static_archive(WW_BROTLICOMMON_A libbrotlicommon.a libbrotli-dev)

set(WW_HTTPLIB_DIR ${WATTWATCH_DIST_SOURCES}/cpp-httplib)
if(NOT EXISTS ${WW_HTTPLIB_DIR}/httplib.h)
  message(FATAL_ERROR "WATTWATCH_PORTABLE: ${WW_HTTPLIB_DIR}/httplib.h is missing; run "
                      "scripts/dist-sources.sh (make dist does)")
endif()

target_link_libraries(ww_dep_fmt INTERFACE fmt::fmt-header-only)
# spdlog's header-only mode over the same fmt (its imported header-only target would link the
# shared libfmt).
target_compile_definitions(ww_dep_spdlog INTERFACE SPDLOG_FMT_EXTERNAL)
target_link_libraries(ww_dep_spdlog INTERFACE ww_dep_fmt Threads::Threads)
target_link_libraries(ww_dep_yaml INTERFACE ${WW_YAML_A})
target_link_libraries(ww_dep_pcre2 INTERFACE ${WW_PCRE2_A})
target_link_libraries(ww_dep_zstd INTERFACE ${WW_ZSTD_A})
target_link_libraries(ww_dep_zlib INTERFACE ${WW_Z_A})
target_link_libraries(ww_dep_utf8proc INTERFACE ${WW_UTF8PROC_A})
# BEFORE: the full header must win over Debian's declarations-only /usr/include/httplib.h.
target_include_directories(ww_dep_httplib BEFORE INTERFACE ${WW_HTTPLIB_DIR})
target_compile_definitions(ww_dep_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT
                                                    CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
target_link_libraries(ww_dep_httplib INTERFACE ${WW_SSL_A} ${WW_CRYPTO_A} ${WW_BROTLIENC_A}
                      ${WW_BROTLIDEC_A} ${WW_BROTLICOMMON_A} ${WW_Z_A} ${CMAKE_DL_LIBS}
                      Threads::Threads)
set(WW_HAVE_SENTENCEPIECE OFF)
add_link_options(-static-libstdc++ -static-libgcc)

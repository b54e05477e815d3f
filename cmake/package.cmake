# `make package` (cpack -G DEB in the release build): a .deb of what cmake/install.cmake installs,
# under /usr, with Depends computed from the binary by dpkg-shlibdeps, the maintainer scripts in
# packaging/debian (service users and state folders; never enabling or starting a service), the
# /etc/default files as conffiles, and Debian's copyright and changelog. The version is
# project()'s. tests/deploy/package_test.py installs, checks and purges it.
include(GNUInstallDirs)
set(WW_DEB_DIR ${CMAKE_SOURCE_DIR}/packaging/debian)

# Debian's per-package docs: copyright, and the changelog compressed as policy wants.
# A native package (no Debian revision): changelog.gz.
configure_file(${WW_DEB_DIR}/changelog.in ${CMAKE_BINARY_DIR}/packaging/changelog @ONLY)
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/packaging/changelog.gz
  COMMAND gzip -9nkf ${CMAKE_BINARY_DIR}/packaging/changelog
  DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog VERBATIM)
add_custom_target(deb_changelog ALL DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
install(FILES ${WW_DEB_DIR}/copyright ${CMAKE_BINARY_DIR}/packaging/changelog.gz
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME wattwatch)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "wattwatch maintainers <maintainers@wattwatch.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "tells GPU training hangs from work by board power")
# (The synopsis line is CPACK_PACKAGE_DESCRIPTION_SUMMARY; this is the extended description.)
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "wattwatch keeps large GPU training jobs honest: it tells compute,
 communication, data starvation, checkpoints, hangs and idle apart from board
 power, utilization and memory, judges the job rather than each GPU, and names
 the culprit ranks of an NCCL hang. It triages nvidia-smi, DCGM and Prometheus
 logs, watches a node live through NVML (loaded at run time), judges a cluster
 from Prometheus, and gates jobs before launch.")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE https://github.com/wattwatch/wattwatch)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd")
set(CPACK_DEBIAN_COMPRESSION_TYPE gzip)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${WW_DEB_DIR}/postinst ${WW_DEB_DIR}/prerm ${WW_DEB_DIR}/postrm ${WW_DEB_DIR}/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
# Install with DESTDIR and the real prefix, so cmake/install_units.cmake writes /usr/bin into the
# units and the defaults under /etc.
set(CPACK_SET_DESTDIR ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES TRUE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
include(CPack)

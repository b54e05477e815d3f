# Install rules (GNUInstallDirs): `cmake --install build --prefix /usr` or
# `make install DESTDIR=...` from a build folder, and the .deb/tarball built from them.
#   bin/wattwatch
#   lib/systemd/system/wattwatch.service, wattwatch-fleet.service (ExecStart at the installed path)
#   /etc/default/wattwatch, wattwatch-fleet (<prefix>/etc/default outside /usr): the units'
#   EnvironmentFile, site flags
#   share/wattwatch/{prometheus,grafana,slurm,kubernetes}/ (rules, dashboards, prolog, manifests)
#   share/man/man1/wattwatch*.1.gz (from each command's --help: scripts/gen_man_pages.sh, help2man)
#   share/bash-completion/completions/wattwatch (from the CLI: `wattwatch completion bash`)
#   share/doc/wattwatch/ (README.md, docs/)
include(GNUInstallDirs)

install(TARGETS wattwatch RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The units in deploy/systemd name /usr/local/bin/wattwatch (a hand install); the installed ones
# name the binary where the install-time prefix puts it (cmake/install_units.cmake).
install(CODE "set(WW_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
set(WW_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
set(WW_STAGING \"${CMAKE_BINARY_DIR}/install-staging\")")
install(SCRIPT cmake/install_units.cmake)

install(FILES deploy/prometheus/wattwatch-rules.yml deploy/prometheus/wattwatch-fleet-rules.yml
              deploy/prometheus/prometheus.yml
        DESTINATION ${CMAKE_INSTALL_DATADIR}/wattwatch/prometheus)
install(DIRECTORY deploy/grafana/ DESTINATION ${CMAKE_INSTALL_DATADIR}/wattwatch/grafana)
install(DIRECTORY deploy/kubernetes/ DESTINATION ${CMAKE_INSTALL_DATADIR}/wattwatch/kubernetes)
install(PROGRAMS deploy/slurm/prolog.sh deploy/slurm/train.sbatch
        DESTINATION ${CMAKE_INSTALL_DATADIR}/wattwatch/slurm)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs)

# Man pages and completion, written from the linked binary at each build where it changed.
find_program(WW_HELP2MAN help2man)
set(WW_GENERATED ${CMAKE_BINARY_DIR}/generated)
if(WW_HELP2MAN)
  add_custom_command(
    OUTPUT ${WW_GENERATED}/man/wattwatch.1.gz
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${WW_GENERATED}/man
    COMMAND ${CMAKE_SOURCE_DIR}/scripts/gen_man_pages.sh $<TARGET_FILE:wattwatch>
            ${WW_GENERATED}/man
    DEPENDS wattwatch ${CMAKE_SOURCE_DIR}/scripts/gen_man_pages.sh
    COMMENT "Man pages from each command's --help" VERBATIM)
  add_custom_target(man ALL DEPENDS ${WW_GENERATED}/man/wattwatch.1.gz)
  install(DIRECTORY ${WW_GENERATED}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
          FILES_MATCHING PATTERN "*.1.gz")
else()
  message(STATUS "help2man not found: no man pages (scripts/install-deps.sh installs it)")
endif()
add_custom_command(
  OUTPUT ${WW_GENERATED}/completion/wattwatch
  COMMAND ${CMAKE_COMMAND} -E make_directory ${WW_GENERATED}/completion
  COMMAND $<TARGET_FILE:wattwatch> completion bash > ${WW_GENERATED}/completion/wattwatch
  DEPENDS wattwatch
  COMMENT "bash completion from the CLI" VERBATIM)
add_custom_target(completion ALL DEPENDS ${WW_GENERATED}/completion/wattwatch)
install(FILES ${WW_GENERATED}/completion/wattwatch
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

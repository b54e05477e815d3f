# Run at install time (install(SCRIPT) in cmake/install.cmake), so a prefix given then
# (`cmake --install build --prefix /usr`, CPack's) decides the paths: the systemd units with
# ExecStart at <prefix>/bin/wattwatch under <prefix>/lib/systemd/system, and their
# EnvironmentFile defaults under /etc/default for the /usr prefix (<prefix>/etc/default else).
# Expects WW_SOURCE_DIR, WW_BINDIR (relative to the prefix) and WW_STAGING (a scratch folder in
# the build tree) set by the caller.
set(prefix "${CMAKE_INSTALL_PREFIX}")
if(prefix STREQUAL "/usr")
  set(etc "/etc")
else()
  set(etc "${prefix}/etc")
endif()
foreach(unit wattwatch.service wattwatch-fleet.service)
  file(READ "${WW_SOURCE_DIR}/deploy/systemd/${unit}" text)
  string(REPLACE "/usr/local/bin/wattwatch" "${prefix}/${WW_BINDIR}/wattwatch" text "${text}")
  string(REPLACE "/etc/default/" "${etc}/default/" text "${text}")
  # (A name of its own: an install into a DESTDIR and a cpack run may stage at the same time.)
  string(RANDOM LENGTH 12 tag)
  set(staged "${WW_STAGING}/${tag}/${unit}")
  file(WRITE "${staged}" "${text}")
  file(INSTALL DESTINATION "${prefix}/lib/systemd/system" TYPE FILE FILES "${staged}")
  file(REMOVE_RECURSE "${WW_STAGING}/${tag}")
endforeach()
file(INSTALL DESTINATION "${etc}/default" TYPE FILE
     FILES "${WW_SOURCE_DIR}/deploy/default/wattwatch" "${WW_SOURCE_DIR}/deploy/default/wattwatch-fleet")

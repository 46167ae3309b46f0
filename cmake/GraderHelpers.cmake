# grader_add_exercise(<id> DRIVER <file> CHECKS <file>)
#
# The child-side driver is compiled into an object file (position independent,
# so it can join the learner's object in a shared library) against the
# exercise's fixed interface; the parent-side checks join the grader library.
function(grader_add_exercise id)
  cmake_parse_arguments(ARG "" "DRIVER;CHECKS" "" ${ARGN})
  set(driver driver_${id})
  add_library(${driver} OBJECT ${ARG_DRIVER})
  set_target_properties(${driver} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${driver} PRIVATE ${PROJECT_SOURCE_DIR}/exercises/${id} ${PROJECT_SOURCE_DIR}/grader)
  target_link_libraries(${driver} PRIVATE torch)
  target_compile_features(${driver} PRIVATE cxx_std_17)
  target_sources(grader_core PRIVATE ${ARG_CHECKS})
  set_property(GLOBAL APPEND PROPERTY GRADER_EXERCISES ${id})
endfunction()

# grader_add_exercise(<id>)
#
# By convention: exercises/<id>/exercise.yaml, grader/checks/<id>/driver.cpp
# (child side) and grader/checks/<id>/checks.cpp (parent side, defining
# grader::<id>::make_suite, with any other .cpp of the folder beside it; its
# helpers live in that namespace too, so the
# checks files can share a unity build). The registry that maps ids to suites is generated
# from the list (grader/CMakeLists.txt), so nothing is registered by hand.
#
# The child-side driver is compiled into an object file (position independent,
# so it can join the learner's object in a shared library) against the
# exercise's fixed interface; the parent-side checks join the grader library;
# the interface header is precompiled for submissions (grader/CMakeLists.txt).
#
# An exercise whose learner file is a .cu (a CUDA kernel, compiled with nvcc
# at grade time) gets no precompiled header, and its driver is compiled with
# GRADER_WITH_CUDA where this LibTorch has CUDA (GRADER_TORCH_HAS_CUDA).
function(grader_add_exercise id)
  set(ARG_DRIVER ${PROJECT_SOURCE_DIR}/grader/checks/${id}/driver.cpp)
  set(ARG_CHECKS ${PROJECT_SOURCE_DIR}/grader/checks/${id}/checks.cpp)
  foreach(file IN ITEMS ${ARG_DRIVER} ${ARG_CHECKS})
    if(NOT EXISTS ${file})
      message(FATAL_ERROR "exercise ${id}: ${file} is missing (every exercise has a driver.cpp and a checks.cpp)")
    endif()
  endforeach()
  # checks.cpp may share its work with further parent-side files of the folder.
  file(GLOB parent_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/grader/checks/${id}/*.cpp)
  list(REMOVE_ITEM parent_sources ${ARG_DRIVER})
  target_sources(grader_core PRIVATE ${parent_sources})
  set_property(GLOBAL APPEND PROPERTY GRADER_EXERCISES ${id})

  # The interface header named in exercise.yaml (precompiled for submissions).
  set(yaml ${PROJECT_SOURCE_DIR}/exercises/${id}/exercise.yaml)
  file(STRINGS ${yaml} interface_line REGEX "^interface:")
  string(REGEX REPLACE "^interface:[ \t]*\"?([^\" \t]+)\"?.*$" "\\1" interface "${interface_line}")
  if(NOT interface OR NOT EXISTS ${PROJECT_SOURCE_DIR}/exercises/${id}/${interface})
    message(FATAL_ERROR "${yaml}: no 'interface:' line naming an existing header")
  endif()
  set_property(GLOBAL PROPERTY GRADER_INTERFACE_${id} ${PROJECT_SOURCE_DIR}/exercises/${id}/${interface})
  file(STRINGS ${yaml} learner_line REGEX "^learner_files:")
  if(learner_line MATCHES "\\.cu[^a-zA-Z0-9_]")
    set_property(GLOBAL PROPERTY GRADER_CUDA_${id} ON)
  endif()
  # The learner's files by name (not a glob of the folder: a file a learner or
  # an editor adds there must not make CMake run again).
  string(REGEX REPLACE "^learner_files:[ \t]*\\[?([^]#]*)\\]?.*$" "\\1" learner_files "${learner_line}")
  string(REGEX REPLACE "[ \t\"']" "" learner_files "${learner_files}")
  string(REPLACE "," ";" learner_files "${learner_files}")
  set_property(GLOBAL PROPERTY GRADER_LEARNER_FILES_${id} ${learner_files})
  # What of the exercise's folder the build reads: ./grade checks these for
  # changes (build/grader-inputs.txt), nothing else a learner does there.
  set_property(GLOBAL APPEND PROPERTY GRADER_INPUTS ${yaml} ${PROJECT_SOURCE_DIR}/exercises/${id}/${interface})
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${yaml})

  # The driver. With clang++ and a precompiled interface, grader/CMakeLists.txt
  # compiles it like a submission, against that header (seconds, not the 20 s
  # of parsing LibTorch's module API); otherwise (a CUDA exercise, no clang++)
  # it is an object library built with the project's compiler.
  set_property(GLOBAL PROPERTY GRADER_DRIVER_SOURCE_${id} ${ARG_DRIVER})
  get_property(cuda GLOBAL PROPERTY GRADER_CUDA_${id})
  if(cuda OR NOT learner_pch)
    set(driver driver_${id})
    add_library(${driver} OBJECT ${ARG_DRIVER})
    set_target_properties(${driver} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    target_include_directories(${driver} PRIVATE ${PROJECT_SOURCE_DIR}/exercises/${id} ${PROJECT_SOURCE_DIR}/grader)
    target_link_libraries(${driver} PRIVATE torch)
    target_compile_features(${driver} PRIVATE cxx_std_17)
    if(GRADER_TORCH_HAS_CUDA)
      target_compile_definitions(${driver} PRIVATE GRADER_WITH_CUDA)
      if(TARGET CUDA::cudart)
        target_link_libraries(${driver} PRIVATE CUDA::cudart)  # its headers; the object links nothing
      endif()
    endif()
  endif()
endfunction()

// Compiled only so CMake can tell the flags a submission needs; see CMakeLists.txt.

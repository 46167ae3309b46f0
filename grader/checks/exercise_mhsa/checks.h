#pragma once

#include "checks/check.h"

namespace grader {
std::unique_ptr<Suite> make_mhsa_suite(const Exercise& exercise);
}

#pragma once
#define TUG_VERSION "0.1.0"

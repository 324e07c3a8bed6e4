// placeholder, replaced by the real implementation
#include "primjit/ir/text.h"

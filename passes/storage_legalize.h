// Shared machinery of BF16StorageLegalize and FP8StorageLegalize: placeholder, being written.
#pragma once

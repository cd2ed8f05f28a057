#pragma once
/// @file metadata_schema.hpp
/// Forwarding header: the metadata schema (`metadata_schema`, `check_metadata`) lives in
/// record/metadata_schema.hpp, below io/ and detect/, so that io/metadata_schema_json.hpp reads it
/// without an include arrow from io/ up to detect/. Existing includes of this path keep working.

#include "memhealth/record/metadata_schema.hpp"

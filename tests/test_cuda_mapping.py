"""NVML index -> CUDA index, by UUID and CUDA_VISIBLE_DEVICES, without touching CUDA."""

from nbgpumon._sources.cuda_devices import map_by_uuid, map_cuda_indices

UUIDS = ["GPU-aaaa1111", "GPU-bbbb2222", "GPU-cccc3333"]


def test_unset_means_every_device_in_order():
    assert map_cuda_indices(UUIDS, None) == ({0: 0, 1: 1, 2: 2}, "")


def test_integer_entries_renumber_the_visible_devices():
    assert map_cuda_indices(UUIDS, "2,0")[0] == {2: 0, 0: 1}


def test_uuid_prefixes_are_matched():
    assert map_cuda_indices(UUIDS, "GPU-bbbb,GPU-aaaa1111")[0] == {1: 0, 0: 1}


def test_parsing_stops_at_the_first_invalid_entry_as_cuda_does():
    assert map_cuda_indices(UUIDS, "1,7,0")[0] == {1: 0}
    assert map_cuda_indices(UUIDS, "")[0] == {}
    assert map_cuda_indices(UUIDS, "0,0")[0] == {0: 0}


def test_mig_entries_are_reported_not_guessed():
    mapping, note = map_cuda_indices(UUIDS, "MIG-1234")
    assert mapping == {} and "MIG" in note


def test_exact_mapping_from_the_frameworks_uuids():
    assert map_by_uuid(UUIDS, ["cccc3333", "GPU-AAAA1111"]) == {2: 0, 0: 1}

"""NVML index -> CUDA index, by UUID and CUDA_VISIBLE_DEVICES, without touching CUDA."""

from nbgpumon._sources.devices.nvml.cuda_devices import cuda_view, map_by_uuid, map_cuda_indices
from nbgpumon._sources.devices.nvml.mig_devices import MigDevice, profile_of

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


def test_an_empty_value_or_minus_one_hides_every_device():
    assert map_cuda_indices(UUIDS, "") == ({}, "")
    assert map_cuda_indices(UUIDS, "-1") == ({}, "")
    assert map_cuda_indices(UUIDS, "1,-1,0")[0] == {1: 0}  # -1 ends the list, as in CUDA


def test_one_device_by_index_by_uuid_or_by_a_unique_prefix_is_cuda0():
    for visible in ("1", " 1 ", "GPU-bbbb2222", "GPU-bbbb"):
        assert map_cuda_indices(UUIDS, visible)[0] == {1: 0}, visible


def test_reversed_order_maps_each_way():
    assert map_cuda_indices(UUIDS[:2], "1,0")[0] == {1: 0, 0: 1}


def test_an_ambiguous_uuid_prefix_or_a_bare_prefix_matches_nothing():
    twins = ["GPU-abcd1111", "GPU-abcd2222"]
    assert map_cuda_indices(twins, "GPU-abcd")[0] == {}
    assert map_cuda_indices(twins, "GPU-")[0] == {}


def test_the_uuid_mapping_leaves_out_a_device_the_framework_cannot_see():
    assert map_by_uuid(UUIDS[:2], ["GPU-bbbb2222"]) == {1: 0}


# -- MIG: CUDA sees one MIG device at most ----------------------------------------------------
def _mig(uuid: str, gpu_instance: int, k: int = 0) -> MigDevice:
    return MigDevice(None, k, uuid, "NVIDIA H200 MIG 1g.18gb", "1g.18gb", gpu_instance, 0, 2**34)


MIGS = [None, [_mig("MIG-aaaa0001", 1), _mig("MIG-aaaa0002", 2, 1)], None]  # GPU 1 in MIG mode


def test_a_mig_uuid_or_a_unique_prefix_of_one_is_cuda0_and_every_other_device_hidden():
    for visible in ("MIG-aaaa0002", "MIG-AAAA0002", " MIG-aaaa0002 ", "0,MIG-aaaa0002"):
        view = cuda_view(UUIDS, MIGS, visible)
        assert (view.cuda, view.mig) == ({1: 0}, {1: 1}), visible
    assert cuda_view(UUIDS, MIGS, "MIG-aaaa").cuda == {}  # two MIG devices start so


def test_the_first_listed_mig_device_is_the_one_cuda_uses_and_the_note_says_so():
    view = cuda_view(UUIDS, MIGS, "MIG-aaaa0001,MIG-aaaa0002")
    assert (view.cuda, view.mig) == ({1: 0}, {1: 0})
    assert view.note.startswith("CUDA uses one MIG device, MIG-aaaa0001 (cuda:0)")


def test_unset_or_an_index_of_a_gpu_in_mig_mode_gives_its_first_mig_device_only():
    for visible in (None, "1", "0,1", "GPU-bbbb"):
        view = cuda_view(UUIDS, MIGS, visible)
        assert (view.cuda, view.mig) == ({1: 0}, {1: 0}), visible


def test_the_older_mig_gpu_uuid_gi_ci_form_names_a_mig_device():
    assert cuda_view(UUIDS, MIGS, "MIG-GPU-bbbb2222/2/0").mig == {1: 1}
    assert cuda_view(UUIDS, MIGS, "MIG-GPU-bbbb2222/3/0").cuda == {}


def test_a_mig_uuid_that_is_not_there_ends_the_list_with_one_line_saying_so():
    view = cuda_view(UUIDS, MIGS, "0,MIG-ffff,1")
    assert (view.cuda, view.mig) == ({0: 0}, {})  # what came before it stays
    assert view.note == (
        "CUDA_VISIBLE_DEVICES names MIG-ffff, which is no MIG device of this machine: "
        "CUDA sees no device from there on (nvidia-smi -L lists them)"
    )


def test_a_gpu_in_mig_mode_without_a_mig_device_is_nothing_to_cuda():
    view = cuda_view(UUIDS, [None, [], None], None)
    assert (view.cuda, view.mig, view.note) == ({0: 0, 2: 1}, {}, "")


def test_the_frameworks_uuid_of_a_mig_device_matches_it_with_or_without_its_prefix():
    assert map_by_uuid(["MIG-aaaa0001"], ["aaaa0001"]) == {0: 0}
    assert map_by_uuid(["MIG-aaaa0001"], ["MIG-AAAA0001"]) == {0: 0}


def test_a_mig_device_s_profile_is_what_its_nvml_name_ends_with():
    assert profile_of("NVIDIA H200 MIG 1g.18gb") == "1g.18gb"
    assert profile_of("NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb") == "1c.3g.20gb"
    assert profile_of("MIG 3g.71gb") == "3g.71gb"
    assert profile_of("NVIDIA H200") == profile_of("NVIDIA HMIG 2") == ""

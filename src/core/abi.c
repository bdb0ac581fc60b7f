/* pdnn_struct_layout: the sizes and member offsets of the public structs as
 * this build compiled them. Bindings that copy the structs by hand (the
 * Python module's ctypes classes) compare their copies with these at load
 * time, so a field added, removed or retyped in polydnn.h stops the binding
 * with a message instead of corrupting memory. */
#include "backend.h"
#include "polydnn_dlpack.h"

#include <stddef.h>
#include <string.h>

typedef struct layout_entry {
    const char *struct_name;
    const char *field; /* NULL: the struct itself */
    size_t offset;
    size_t size;
} layout_entry;

/* The names come from the same tokens as offsetof and sizeof, so the table
 * cannot spell a member differently from the struct. */
#define STRUCT(S) {#S, NULL, 0, sizeof(S)}
#define FIELD(S, F) {#S, #F, offsetof(S, F), sizeof(((S *)NULL)->F)}

static const layout_entry layouts[] = {
    STRUCT(pdnn_context_options),
    FIELD(pdnn_context_options, allow_growth),
    FIELD(pdnn_context_options, growth_policy),
    FIELD(pdnn_context_options, memory_fraction),
    FIELD(pdnn_context_options, memory_limit),
    FIELD(pdnn_context_options, log_device_placement),
    FIELD(pdnn_context_options, visible_devices),
    FIELD(pdnn_context_options, tuning),
    FIELD(pdnn_context_options, enable_tensor_float_32_execution),

    STRUCT(pdnn_device_info),
    FIELD(pdnn_device_info, name),
    FIELD(pdnn_device_info, type),
    FIELD(pdnn_device_info, index),
    FIELD(pdnn_device_info, backend),
    FIELD(pdnn_device_info, vendor),
    FIELD(pdnn_device_info, device_name),
    FIELD(pdnn_device_info, driver_version),
    FIELD(pdnn_device_info, memory_bytes),
    FIELD(pdnn_device_info, max_alloc_bytes),
    FIELD(pdnn_device_info, compute_units),

    STRUCT(pdnn_device_spec),
    FIELD(pdnn_device_spec, job),
    FIELD(pdnn_device_spec, replica),
    FIELD(pdnn_device_spec, task),
    FIELD(pdnn_device_spec, type),
    FIELD(pdnn_device_spec, index),

    STRUCT(pdnn_memory_stats),
    FIELD(pdnn_memory_stats, bytes_in_use),
    FIELD(pdnn_memory_stats, peak_bytes_in_use),
    FIELD(pdnn_memory_stats, bytes_reserved),
    FIELD(pdnn_memory_stats, peak_bytes_reserved),
    FIELD(pdnn_memory_stats, num_allocs),
    FIELD(pdnn_memory_stats, largest_alloc),
    FIELD(pdnn_memory_stats, num_regions),
    FIELD(pdnn_memory_stats, largest_free_chunk),
    FIELD(pdnn_memory_stats, limit),

    STRUCT(pdnn_tensor_desc),
    FIELD(pdnn_tensor_desc, dtype),
    FIELD(pdnn_tensor_desc, layout),
    FIELD(pdnn_tensor_desc, dims),
    FIELD(pdnn_tensor_desc, rank),

    STRUCT(pdnn_conv2d_params),
    FIELD(pdnn_conv2d_params, stride_h),
    FIELD(pdnn_conv2d_params, stride_w),
    FIELD(pdnn_conv2d_params, dilation_h),
    FIELD(pdnn_conv2d_params, dilation_w),
    FIELD(pdnn_conv2d_params, pad_top),
    FIELD(pdnn_conv2d_params, pad_bottom),
    FIELD(pdnn_conv2d_params, pad_left),
    FIELD(pdnn_conv2d_params, pad_right),
    FIELD(pdnn_conv2d_params, groups),
    FIELD(pdnn_conv2d_params, relu),
    FIELD(pdnn_conv2d_params, algorithm),
    FIELD(pdnn_conv2d_params, bwd_data_algorithm),
    FIELD(pdnn_conv2d_params, bwd_filter_algorithm),
    FIELD(pdnn_conv2d_params, relu_cap),
    FIELD(pdnn_conv2d_params, workspace_limit),

    STRUCT(pdnn_conv2d_tuning),
    FIELD(pdnn_conv2d_tuning, tunable),
    FIELD(pdnn_conv2d_tuning, cached),
    FIELD(pdnn_conv2d_tuning, searched),
    FIELD(pdnn_conv2d_tuning, search_seconds),
    FIELD(pdnn_conv2d_tuning, config),
    FIELD(pdnn_conv2d_tuning, algo_measured),
    FIELD(pdnn_conv2d_tuning, algo_searched),

    STRUCT(pdnn_pool2d_params),
    FIELD(pdnn_pool2d_params, mode),
    FIELD(pdnn_pool2d_params, window_h),
    FIELD(pdnn_pool2d_params, window_w),
    FIELD(pdnn_pool2d_params, stride_h),
    FIELD(pdnn_pool2d_params, stride_w),
    FIELD(pdnn_pool2d_params, pad_top),
    FIELD(pdnn_pool2d_params, pad_bottom),
    FIELD(pdnn_pool2d_params, pad_left),
    FIELD(pdnn_pool2d_params, pad_right),
    FIELD(pdnn_pool2d_params, ceil_mode),

    STRUCT(pdnn_batch_norm_params),
    FIELD(pdnn_batch_norm_params, training),
    FIELD(pdnn_batch_norm_params, epsilon),
    FIELD(pdnn_batch_norm_params, momentum),

    STRUCT(pdnn_optimizer_params),
    FIELD(pdnn_optimizer_params, kind),
    FIELD(pdnn_optimizer_params, learning_rate),
    FIELD(pdnn_optimizer_params, momentum),
    FIELD(pdnn_optimizer_params, nesterov),
    FIELD(pdnn_optimizer_params, weight_decay),
    FIELD(pdnn_optimizer_params, beta1),
    FIELD(pdnn_optimizer_params, beta2),
    FIELD(pdnn_optimizer_params, epsilon),

    STRUCT(pdnn_session_config),
    FIELD(pdnn_session_config, context),
    FIELD(pdnn_session_config, options),
    FIELD(pdnn_session_config, log_device_placement),
    FIELD(pdnn_session_config, allow_soft_placement),
    FIELD(pdnn_session_config, log),
    FIELD(pdnn_session_config, log_user),
    FIELD(pdnn_session_config, profile),
    FIELD(pdnn_session_config, distributed),
    FIELD(pdnn_session_config, mpi_comm),
    FIELD(pdnn_session_config, allreduce_bucket_bytes),
    FIELD(pdnn_session_config, allreduce_overlap),
    FIELD(pdnn_session_config, collective_timeout),

    STRUCT(pdnn_onnx_options),
    FIELD(pdnn_onnx_options, batch),
    FIELD(pdnn_onnx_options, base_dir),
    FIELD(pdnn_onnx_options, device),
    FIELD(pdnn_onnx_options, no_fusion),
    FIELD(pdnn_onnx_options, layout),
    FIELD(pdnn_onnx_options, trainable),
    FIELD(pdnn_onnx_options, seed),
    FIELD(pdnn_onnx_options, distributed),
    FIELD(pdnn_onnx_options, precision),

    STRUCT(pdnn_onnx_io),
    FIELD(pdnn_onnx_io, n_inputs),
    FIELD(pdnn_onnx_io, inputs),
    FIELD(pdnn_onnx_io, input_rank),
    FIELD(pdnn_onnx_io, n_outputs),
    FIELD(pdnn_onnx_io, outputs),
    FIELD(pdnn_onnx_io, output_rank),

    STRUCT(pdnn_training_towers),
    FIELD(pdnn_training_towers, n),
    FIELD(pdnn_training_towers, devices),
    FIELD(pdnn_training_towers, param_device),

    STRUCT(DLPackVersion),
    FIELD(DLPackVersion, major),
    FIELD(DLPackVersion, minor),

    STRUCT(DLDevice),
    FIELD(DLDevice, device_type),
    FIELD(DLDevice, device_id),

    STRUCT(DLDataType),
    FIELD(DLDataType, code),
    FIELD(DLDataType, bits),
    FIELD(DLDataType, lanes),

    STRUCT(DLTensor),
    FIELD(DLTensor, data),
    FIELD(DLTensor, device),
    FIELD(DLTensor, ndim),
    FIELD(DLTensor, dtype),
    FIELD(DLTensor, shape),
    FIELD(DLTensor, strides),
    FIELD(DLTensor, byte_offset),

    STRUCT(DLManagedTensor),
    FIELD(DLManagedTensor, dl_tensor),
    FIELD(DLManagedTensor, manager_ctx),
    FIELD(DLManagedTensor, deleter),

    STRUCT(DLManagedTensorVersioned),
    FIELD(DLManagedTensorVersioned, version),
    FIELD(DLManagedTensorVersioned, manager_ctx),
    FIELD(DLManagedTensorVersioned, deleter),
    FIELD(DLManagedTensorVersioned, flags),
    FIELD(DLManagedTensorVersioned, dl_tensor),
};

#undef STRUCT
#undef FIELD

pdnn_status pdnn_struct_layout(const char *struct_name, const char *field, size_t *offset,
                               size_t *size)
{
    if (!struct_name)
        return pdnn__error(PDNN_ERR_INVALID_ARGUMENT, "pdnn_struct_layout: struct_name is NULL");
    int known_struct = 0;
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++) {
        const layout_entry *e = &layouts[i];
        if (strcmp(e->struct_name, struct_name) != 0)
            continue;
        known_struct = 1;
        if (field ? (e->field && strcmp(e->field, field) == 0) : !e->field) {
            if (offset)
                *offset = e->offset;
            if (size)
                *size = e->size;
            return PDNN_SUCCESS;
        }
    }
    if (known_struct)
        return pdnn__error(PDNN_ERR_NOT_FOUND, "pdnn_struct_layout: struct %s has no member '%s'",
                           struct_name, field);
    return pdnn__error(PDNN_ERR_NOT_FOUND,
                       "pdnn_struct_layout: no public struct is named '%s' (the C name, e.g. "
                       "\"pdnn_tensor_desc\" or \"DLTensor\")",
                       struct_name);
}

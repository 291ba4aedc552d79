# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_tritonctl_global_optspecs
    string join \n color= q/quiet v/verbose max-file-bytes= follow-symlinks h/help V/version
end

function __fish_tritonctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_tritonctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_tritonctl_using_subcommand
    set -l cmd (__fish_tritonctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c tritonctl -n "__fish_tritonctl_needs_command" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_needs_command" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_needs_command" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "validate" -d 'Check config.pbtxt files, model directories and model repositories the way Triton does when it loads them'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "explain" -d 'Print the documentation of a rule'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "fmt" -d 'Rewrite config.pbtxt files in one canonical layout, comments kept'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "convert" -d 'Convert a config between text format and Triton\'s JSON form'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "autoconfig" -d 'Print the config Triton\'s ONNX Runtime backend auto-completes for an ONNX model'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "simulate" -d 'Replay a trace of requests through a model\'s scheduler on a virtual clock'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "trace" -d 'Make request traces for `simulate`'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "doctor" -d 'Report what this machine offers the local runner: ONNX Runtime, execution providers, CUDA driver and devices'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "run" -d 'Run a model locally with ONNX Runtime, batched by the same scheduler code as `simulate`, on a real clock'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "perf" -d 'Load-test a model on a running KServe v2 / Triton server (closed or open loop, latency from the intended send time)'
complete -c tritonctl -n "__fish_tritonctl_needs_command" -f -a "tune" -d 'Find the cheapest config (instances, batching, queue delay) that meets a latency objective at a workload, on simulate\'s virtual clock'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l format -d 'Output format' -r -f -a "human\t'rustc-style messages with the source line (default)'
json\t'One JSON document (see schemas/validate.schema.json)'
github\t'GitHub Actions workflow commands (annotations)'
sarif\t'SARIF 2.1.0, for code scanning'
junit\t'JUnit XML, one test case per file'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l allow -d 'Drop the findings of a rule (code or name; repeatable)' -r -f -a "E0001\t'The text is not valid protobuf text format'
E0002\t'Messages or lists are nested deeper than 100 levels'
E0101\t'A field that the message type does not have'
E0102\t'A value of the wrong kind for its field (string, number, message, list)'
E0103\t'An enum value name that the enum does not define'
E0104\t'An integer outside the range of its field\'s type'
E0105\t'A non-repeated field is given more than once'
E0106\t'Two members of one oneof are set'
E0107\t'A scalar field without \':\' after its name'
E0108\t'An extension or Any field name in brackets'
E0109\t'A boolean written in a form protobuf does not accept'
E0201\t'Triton cannot tell which backend serves the model'
E0202\t'No backend could be derived and the platform is not one Triton knows'
E0203\t'An ensemble names a backend'
E0204\t'The platform does not belong to the named backend'
E0205\t'`max_batch_size` is negative'
E0206\t'A dynamic-batching preferred batch size is 0 or negative'
E0207\t'A dynamic-batching preferred batch size exceeds `max_batch_size`'
E0208\t'`default_priority_level` is not within `[1, priority_levels]`'
E0209\t'A `priority_queue_policy` key is not a valid priority level'
E0210\t'`preserve_ordering` with more than one priority level'
E0211\t'`preserve_ordering` with a queue policy that delays timed-out requests'
E0212\t'The response cache is enabled for a sequence-batched model'
E0213\t'A sequence-batching `control_input` has no name'
E0214\t'Two sequence-batching `control_input` entries use the same tensor'
E0215\t'A sequence control kind is given for more than one tensor'
E0216\t'A START/END/READY control gives no false/true values'
E0217\t'A START/END/READY control gives more than one kind of false/true values'
E0218\t'A false/true list does not have exactly two entries'
E0219\t'A CORRID control gives false/true values'
E0220\t'A CORRID control has a data type other than UINT64, INT64, UINT32, INT32 or STRING'
E0221\t'A preferred batch size of the oldest strategy is 0 or negative'
E0222\t'A preferred batch size of the oldest strategy exceeds `max_batch_size`'
E0223\t'`direct.minimum_slot_utilization` is outside 0.0..1.0'
E0224\t'An ensemble without `ensemble_scheduling`'
E0225\t'The response cache is enabled for a decoupled model'
E0226\t'A `model_metrics.metric_control` lacks `metric_identifier`'
E0227\t'A metric identifier has an empty `family`'
E0228\t'A `model_metrics.metric_control` lacks `histogram_options`'
E0229\t'`histogram_options` without buckets'
E0301\t'An input or output has no name'
E0302\t'An input or output has no `data_type`'
E0303\t'An input or output has no `dims`'
E0304\t'An empty `reshape` on a model that does not batch'
E0305\t'A dimension is 0 or below -1'
E0306\t'A `reshape` dimension is 0 or below -1'
E0307\t'The element count of a shape does not fit in 64 bits'
E0308\t'`dims` and `reshape` hold different numbers of elements'
E0309\t'`dims` and `reshape` split at their -1 entries into different numbers of parts'
E0310\t'An input with format NHWC/NCHW does not have 3 dims'
E0311\t'`is_shape_tensor` on a model that is not TensorRT'
E0312\t'`is_non_linear_format_io` on a model that is not TensorRT'
E0313\t'A non-linear-format tensor does not have 3 dims'
E0314\t'A `batch_input` does not name exactly one source input'
E0315\t'A `batch_input` kind Triton does not know'
E0316\t'A `batch_input` whose data type is not INT32 or FP32'
E0317\t'A `batch_input`/`batch_output` source is not a model input'
E0318\t'A `batch_output` does not name exactly one source input'
E0319\t'A `batch_output` kind Triton does not know'
E0320\t'A `batch_output` target is not a model output'
E0321\t'A `batch_output` lists the same target twice'
E0401\t'A KIND_MODEL instance group lists GPUs'
E0402\t'A KIND_GPU instance group on a server without usable GPUs'
E0403\t'An instance group lists a GPU the server does not have'
E0404\t'A KIND_CPU instance group lists GPUs'
E0405\t'An instance group kind given as a number Triton does not know'
E0406\t'An instance group names TensorRT optimization profiles on another platform'
E0407\t'An empty string in an instance group\'s `profile` list'
E0408\t'An instance group `profile` entry that is not a number'
E0409\t'A negative instance group `profile` entry'
E0501\t'TRITON_BATCH_STRATEGY_PATH is set on a model that uses the sequence batcher'
E0502\t'The custom batch strategy library lies outside the model directory'
E0503\t'The custom batch strategy library does not exist'
E0504\t'A sequence state lists more than one initial_state'
E0505\t'initial_state data_type differs from the state\'s data_type'
E0506\t'initial_state without a name'
E0507\t'Two states with the same input_name both carry an initial_state'
E0508\t'initial_state dims have a different rank than the state dims'
E0509\t'initial_state dims contain -1'
E0510\t'An initial_state dim differs from a fixed state dim'
E0511\t'initial_state data_file holds fewer bytes than the initial tensor needs'
E0512\t'initial_state data_file does not exist'
E0513\t'initial_state has neither zero_data nor data_file'
E0514\t'use_growable_memory without use_same_buffer_for_input_output'
E0515\t'use_growable_memory on a model with CPU instances'
E0601\t'`ensemble_scheduling` on a model whose platform is not `ensemble`'
E0602\t'An ensemble with `instance_group`'
E0603\t'An ensemble with `optimization`'
E0604\t'An ensemble with `model_warmup`'
E0605\t'An ensemble without any `step`'
E0606\t'A step without `model_name`, `input_map` or `output_map`'
E0607\t'Two output maps write the same ensemble tensor'
E0608\t'An ensemble input that no step reads'
E0609\t'An ensemble output that no step map mentions'
E0610\t'An ensemble output that cannot be computed from the ensemble inputs'
E0611\t'An intermediate ensemble tensor that is never produced or never consumed'
E0620\t'The ensemble\'s `max_batch_size` is larger than a composing model\'s'
E0621\t'An `input_map` key that is not an input of the step\'s model'
E0622\t'A required input of a composing model is not fed by the step'
E0623\t'An `output_map` key that is not an output of the step\'s model'
E0624\t'An ensemble tensor used with two different data types'
E0625\t'An ensemble tensor used with two incompatible shapes'
E0626\t'A step combines tensors that descend from different decoupled models'
E0630\t'A step names a model that is not in the repository'
E0631\t'Ensembles that contain each other'
E0632\t'A step asks for a model version that will not be loaded'
E0702\t'The config\'s `name` differs from the model directory\'s name'
E0703\t'No version directory is selected by the version policy'
E0704\t'`runtime` names a library path that leaves its directory'
E0705\t'No config.pbtxt while auto-complete is disabled'
E0706\t'A model\'s file is a symbolic link that leads out of the directory being validated'
E0801\t'The stateful backend needs the onnx_file_name parameter'
E0802\t'The ONNX file named by onnx_file_name is missing from a version directory'
E0803\t'The state_pairs parameter is malformed'
E0804\t'A state tensor (or the reset tensor) is listed as a config input or output'
E0805\t'No CONTROL_SEQUENCE_START control names the model\'s reset input'
E0806\t'No CONTROL_SEQUENCE_END control'
E0807\t'START/END controls of the stateful backend must use int32_false_true'
E0808\t'The stateful backend requires sequence_batching'
E0809\t'The stateful backend\'s state storage configuration is inconsistent'
E0810\t'Lazy buffer parameters are incomplete, negative or not integers'
E0811\t'A stateful-backend input or output does not have exactly one -1 dimension'
E0812\t'More than 5 inputs or outputs for the stateful backend'
E0813\t'A data type the stateful backend does not support'
E0814\t'The stateful backend needs max_batch_size ≥ 1'
E0815\t'The stateful backend needs at least one input and one output'
E0901\t'A warmup input has a variable-size (-1) dimension'
E0902\t'A warmup input has no data_type'
E0903\t'A warmup input has a negative dimension other than -1'
E0904\t'A warmup input has neither zero_data, random_data nor input_data_file'
E0905\t'A warmup input_data_file holds fewer bytes than the input needs'
E0906\t'A warmup input_data_file does not exist'
E0907\t'A warmup sample does not provide every required model input'
E0908\t'A warmup input\'s data_type differs from the model input\'s'
E0909\t'A warmup input\'s dims do not fit the model input\'s dims'
E0910\t'Warmup on a sequence model whose CORRID control is TYPE_STRING'
E0911\t'A TYPE_STRING warmup input_data_file does not hold the input\'s elements'
N0001\t'A KIND_CPU group without count gets 2 instances for ONNX Runtime and TensorFlow'
N0002\t'response_cache works only when the server has a cache configured'
N0701\t'A model directory without config.pbtxt'
N0702\t'An ensemble step uses a model that fails to load'
N0703\t'A config checked on its own names neither platform nor backend'
W0001\t'A preferred batch size that the scheduler can never form'
W0002\t'preferred_batch_size lists a size twice or out of order'
W0003\t'max_queue_delay_microseconds on a model without batching has no effect'
W0004\t'dynamic_batching on a model with max_batch_size 0 forms no batches'
W0005\t'max_sequence_idle_microseconds is shorter than 100 ms'
W0006\t'instance_group count 0 or negative is silently replaced'
W0007\t'An instance group lists the same GPU more than once'
W0008\t'preserve_ordering on a decoupled model holds back streamed responses'
W0009\t'platform has no effect (or a non-canonical value) for this backend'
W0010\t'default_model_filename is missing from every version directory'
W0012\t'Two sequence states share an input_name or an output_name'
W0013\t'A queue policy\'s timeout_action or allow_timeout_override has no timeout to act on'
W0014\t'Priority settings without priority_levels are ignored'
W0080\t'A parameter the stateful backend does not read'
W0081\t'The stateful backend supports only the Oldest sequence strategy'
W0082\t'A stateful-backend parameter value the backend does not understand'
W0083\t'buffer_dealloc_threshold is not above buffer_alloc_threshold'
W0701\t'A version directory whose name starts with 0'
W0702\t'A sub-directory of the model that is not a version number'
W0703\t'`version_policy.specific` lists a version without a directory'
W0704\t'A backend that is not one of Triton\'s standard backends'
W0705\t'The `runtime` library is not in the model directory and not a known backend\'s library'
W0706\t'A hidden directory in the model repository'
W0901\t'model_metrics names a metric family Triton core does not let you customise'
W0902\t'Histogram bucket boundaries are not strictly increasing'
W0903\t'A warmup input is neither a model input nor a sequence control input'
W0904\t'A warmup sample\'s batch_size exceeds what the backend accepts'
W0905\t'A warmup sample with batch_size 0 is skipped'
W1001\t'A suppression comment names a rule that does not exist'
W1002\t'A suppression comment silences nothing'
W1101\t'A Python model\'s BLS call names a model that is not in the repository'
W1102\t'A BLS call to a stateful model without a correlation ID or sequence flags'
W1103\t'A Python model\'s BLS call targets the model itself'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l deny -d 'Report the findings of a rule as errors (code or name; repeatable)' -r -f -a "E0001\t'The text is not valid protobuf text format'
E0002\t'Messages or lists are nested deeper than 100 levels'
E0101\t'A field that the message type does not have'
E0102\t'A value of the wrong kind for its field (string, number, message, list)'
E0103\t'An enum value name that the enum does not define'
E0104\t'An integer outside the range of its field\'s type'
E0105\t'A non-repeated field is given more than once'
E0106\t'Two members of one oneof are set'
E0107\t'A scalar field without \':\' after its name'
E0108\t'An extension or Any field name in brackets'
E0109\t'A boolean written in a form protobuf does not accept'
E0201\t'Triton cannot tell which backend serves the model'
E0202\t'No backend could be derived and the platform is not one Triton knows'
E0203\t'An ensemble names a backend'
E0204\t'The platform does not belong to the named backend'
E0205\t'`max_batch_size` is negative'
E0206\t'A dynamic-batching preferred batch size is 0 or negative'
E0207\t'A dynamic-batching preferred batch size exceeds `max_batch_size`'
E0208\t'`default_priority_level` is not within `[1, priority_levels]`'
E0209\t'A `priority_queue_policy` key is not a valid priority level'
E0210\t'`preserve_ordering` with more than one priority level'
E0211\t'`preserve_ordering` with a queue policy that delays timed-out requests'
E0212\t'The response cache is enabled for a sequence-batched model'
E0213\t'A sequence-batching `control_input` has no name'
E0214\t'Two sequence-batching `control_input` entries use the same tensor'
E0215\t'A sequence control kind is given for more than one tensor'
E0216\t'A START/END/READY control gives no false/true values'
E0217\t'A START/END/READY control gives more than one kind of false/true values'
E0218\t'A false/true list does not have exactly two entries'
E0219\t'A CORRID control gives false/true values'
E0220\t'A CORRID control has a data type other than UINT64, INT64, UINT32, INT32 or STRING'
E0221\t'A preferred batch size of the oldest strategy is 0 or negative'
E0222\t'A preferred batch size of the oldest strategy exceeds `max_batch_size`'
E0223\t'`direct.minimum_slot_utilization` is outside 0.0..1.0'
E0224\t'An ensemble without `ensemble_scheduling`'
E0225\t'The response cache is enabled for a decoupled model'
E0226\t'A `model_metrics.metric_control` lacks `metric_identifier`'
E0227\t'A metric identifier has an empty `family`'
E0228\t'A `model_metrics.metric_control` lacks `histogram_options`'
E0229\t'`histogram_options` without buckets'
E0301\t'An input or output has no name'
E0302\t'An input or output has no `data_type`'
E0303\t'An input or output has no `dims`'
E0304\t'An empty `reshape` on a model that does not batch'
E0305\t'A dimension is 0 or below -1'
E0306\t'A `reshape` dimension is 0 or below -1'
E0307\t'The element count of a shape does not fit in 64 bits'
E0308\t'`dims` and `reshape` hold different numbers of elements'
E0309\t'`dims` and `reshape` split at their -1 entries into different numbers of parts'
E0310\t'An input with format NHWC/NCHW does not have 3 dims'
E0311\t'`is_shape_tensor` on a model that is not TensorRT'
E0312\t'`is_non_linear_format_io` on a model that is not TensorRT'
E0313\t'A non-linear-format tensor does not have 3 dims'
E0314\t'A `batch_input` does not name exactly one source input'
E0315\t'A `batch_input` kind Triton does not know'
E0316\t'A `batch_input` whose data type is not INT32 or FP32'
E0317\t'A `batch_input`/`batch_output` source is not a model input'
E0318\t'A `batch_output` does not name exactly one source input'
E0319\t'A `batch_output` kind Triton does not know'
E0320\t'A `batch_output` target is not a model output'
E0321\t'A `batch_output` lists the same target twice'
E0401\t'A KIND_MODEL instance group lists GPUs'
E0402\t'A KIND_GPU instance group on a server without usable GPUs'
E0403\t'An instance group lists a GPU the server does not have'
E0404\t'A KIND_CPU instance group lists GPUs'
E0405\t'An instance group kind given as a number Triton does not know'
E0406\t'An instance group names TensorRT optimization profiles on another platform'
E0407\t'An empty string in an instance group\'s `profile` list'
E0408\t'An instance group `profile` entry that is not a number'
E0409\t'A negative instance group `profile` entry'
E0501\t'TRITON_BATCH_STRATEGY_PATH is set on a model that uses the sequence batcher'
E0502\t'The custom batch strategy library lies outside the model directory'
E0503\t'The custom batch strategy library does not exist'
E0504\t'A sequence state lists more than one initial_state'
E0505\t'initial_state data_type differs from the state\'s data_type'
E0506\t'initial_state without a name'
E0507\t'Two states with the same input_name both carry an initial_state'
E0508\t'initial_state dims have a different rank than the state dims'
E0509\t'initial_state dims contain -1'
E0510\t'An initial_state dim differs from a fixed state dim'
E0511\t'initial_state data_file holds fewer bytes than the initial tensor needs'
E0512\t'initial_state data_file does not exist'
E0513\t'initial_state has neither zero_data nor data_file'
E0514\t'use_growable_memory without use_same_buffer_for_input_output'
E0515\t'use_growable_memory on a model with CPU instances'
E0601\t'`ensemble_scheduling` on a model whose platform is not `ensemble`'
E0602\t'An ensemble with `instance_group`'
E0603\t'An ensemble with `optimization`'
E0604\t'An ensemble with `model_warmup`'
E0605\t'An ensemble without any `step`'
E0606\t'A step without `model_name`, `input_map` or `output_map`'
E0607\t'Two output maps write the same ensemble tensor'
E0608\t'An ensemble input that no step reads'
E0609\t'An ensemble output that no step map mentions'
E0610\t'An ensemble output that cannot be computed from the ensemble inputs'
E0611\t'An intermediate ensemble tensor that is never produced or never consumed'
E0620\t'The ensemble\'s `max_batch_size` is larger than a composing model\'s'
E0621\t'An `input_map` key that is not an input of the step\'s model'
E0622\t'A required input of a composing model is not fed by the step'
E0623\t'An `output_map` key that is not an output of the step\'s model'
E0624\t'An ensemble tensor used with two different data types'
E0625\t'An ensemble tensor used with two incompatible shapes'
E0626\t'A step combines tensors that descend from different decoupled models'
E0630\t'A step names a model that is not in the repository'
E0631\t'Ensembles that contain each other'
E0632\t'A step asks for a model version that will not be loaded'
E0702\t'The config\'s `name` differs from the model directory\'s name'
E0703\t'No version directory is selected by the version policy'
E0704\t'`runtime` names a library path that leaves its directory'
E0705\t'No config.pbtxt while auto-complete is disabled'
E0706\t'A model\'s file is a symbolic link that leads out of the directory being validated'
E0801\t'The stateful backend needs the onnx_file_name parameter'
E0802\t'The ONNX file named by onnx_file_name is missing from a version directory'
E0803\t'The state_pairs parameter is malformed'
E0804\t'A state tensor (or the reset tensor) is listed as a config input or output'
E0805\t'No CONTROL_SEQUENCE_START control names the model\'s reset input'
E0806\t'No CONTROL_SEQUENCE_END control'
E0807\t'START/END controls of the stateful backend must use int32_false_true'
E0808\t'The stateful backend requires sequence_batching'
E0809\t'The stateful backend\'s state storage configuration is inconsistent'
E0810\t'Lazy buffer parameters are incomplete, negative or not integers'
E0811\t'A stateful-backend input or output does not have exactly one -1 dimension'
E0812\t'More than 5 inputs or outputs for the stateful backend'
E0813\t'A data type the stateful backend does not support'
E0814\t'The stateful backend needs max_batch_size ≥ 1'
E0815\t'The stateful backend needs at least one input and one output'
E0901\t'A warmup input has a variable-size (-1) dimension'
E0902\t'A warmup input has no data_type'
E0903\t'A warmup input has a negative dimension other than -1'
E0904\t'A warmup input has neither zero_data, random_data nor input_data_file'
E0905\t'A warmup input_data_file holds fewer bytes than the input needs'
E0906\t'A warmup input_data_file does not exist'
E0907\t'A warmup sample does not provide every required model input'
E0908\t'A warmup input\'s data_type differs from the model input\'s'
E0909\t'A warmup input\'s dims do not fit the model input\'s dims'
E0910\t'Warmup on a sequence model whose CORRID control is TYPE_STRING'
E0911\t'A TYPE_STRING warmup input_data_file does not hold the input\'s elements'
N0001\t'A KIND_CPU group without count gets 2 instances for ONNX Runtime and TensorFlow'
N0002\t'response_cache works only when the server has a cache configured'
N0701\t'A model directory without config.pbtxt'
N0702\t'An ensemble step uses a model that fails to load'
N0703\t'A config checked on its own names neither platform nor backend'
W0001\t'A preferred batch size that the scheduler can never form'
W0002\t'preferred_batch_size lists a size twice or out of order'
W0003\t'max_queue_delay_microseconds on a model without batching has no effect'
W0004\t'dynamic_batching on a model with max_batch_size 0 forms no batches'
W0005\t'max_sequence_idle_microseconds is shorter than 100 ms'
W0006\t'instance_group count 0 or negative is silently replaced'
W0007\t'An instance group lists the same GPU more than once'
W0008\t'preserve_ordering on a decoupled model holds back streamed responses'
W0009\t'platform has no effect (or a non-canonical value) for this backend'
W0010\t'default_model_filename is missing from every version directory'
W0012\t'Two sequence states share an input_name or an output_name'
W0013\t'A queue policy\'s timeout_action or allow_timeout_override has no timeout to act on'
W0014\t'Priority settings without priority_levels are ignored'
W0080\t'A parameter the stateful backend does not read'
W0081\t'The stateful backend supports only the Oldest sequence strategy'
W0082\t'A stateful-backend parameter value the backend does not understand'
W0083\t'buffer_dealloc_threshold is not above buffer_alloc_threshold'
W0701\t'A version directory whose name starts with 0'
W0702\t'A sub-directory of the model that is not a version number'
W0703\t'`version_policy.specific` lists a version without a directory'
W0704\t'A backend that is not one of Triton\'s standard backends'
W0705\t'The `runtime` library is not in the model directory and not a known backend\'s library'
W0706\t'A hidden directory in the model repository'
W0901\t'model_metrics names a metric family Triton core does not let you customise'
W0902\t'Histogram bucket boundaries are not strictly increasing'
W0903\t'A warmup input is neither a model input nor a sequence control input'
W0904\t'A warmup sample\'s batch_size exceeds what the backend accepts'
W0905\t'A warmup sample with batch_size 0 is skipped'
W1001\t'A suppression comment names a rule that does not exist'
W1002\t'A suppression comment silences nothing'
W1101\t'A Python model\'s BLS call names a model that is not in the repository'
W1102\t'A BLS call to a stateful model without a correlation ID or sequence flags'
W1103\t'A Python model\'s BLS call targets the model itself'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l platform-default -d 'Platform assumed when a config names neither platform nor backend and no model file reveals it' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l known-backend -d 'A backend installed on the target server besides Triton\'s standard ones (repeatable)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l gpus -d 'GPU ids of the target server, comma-separated (default: none, a CPU-only server)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l min-compute-capability -d 'The target server\'s minimum supported CUDA compute capability' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l config -d 'Read settings from FILE instead of the tritonctl.toml found by walking up from each path' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l strict -d 'Warnings count as errors'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l disable-auto-complete-config -d 'Validate as a server started with --disable-auto-complete-config does: configs must be complete, a missing config.pbtxt is an error'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l exit-zero -d 'Exit 0 even when there are error findings'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l no-config -d 'Ignore tritonctl.toml files'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -l print-config -d 'Print each model directory\'s config as Triton reports it after the load (GET /v2/models/<m>/config: defaults, auto-complete, instance groups filled in) instead of the findings; exit 1 with the findings when Triton would refuse the load'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand validate" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -l all -d 'List every rule'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -l check -d 'Write nothing; list the files that would change and exit 1 if any'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -l diff -d 'Write nothing; print a unified diff of the changes and exit 1 if any'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand fmt" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -l to -d 'Output format' -r -f -a "json\t'Triton\'s JSON form (what GET /v2/models/<model>/config returns)'
pbtxt\t'Protobuf text format, in the layout of `tritonctl fmt`'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand convert" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l max-batch-size -l default-max-batch-size -d 'Triton\'s default-max-batch-size: the max_batch_size given to a model that can batch when the config sets none (0 disables batching)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l merge -d 'Complete this partial config the way Triton does (fails with Triton\'s message where it contradicts the model); `-` reads standard input' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l format -d 'Output format' -r -f -a "pbtxt\t'Protobuf text format (config.pbtxt)'
json\t'Triton\'s JSON form (what GET /v2/models/<model>/config returns)'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l gpus -d 'GPU ids of the target server, comma-separated (default: none, a CPU-only server); decides the instance group of --full' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l write -d 'Write config.pbtxt into the model directory instead of printing it'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l force -d 'With --write: replace an existing config.pbtxt'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l full -d 'Print everything Triton reports for the model (version policy, instance groups, pinned memory, ...), not only what auto-complete adds'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l minimal -d 'Print only what auto-complete adds to the config (the default): name, platform and backend, max_batch_size, input, output, dynamic_batching'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -l triton-compatible -d 'Do as Triton does even where it fails: list sequence control and state tensors as ordinary inputs and outputs'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand autoconfig" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l config -d 'The model\'s config.pbtxt, or its model directory. For an ensemble, its model directory in the model repository (REPO/ENSEMBLE): the composing models are read from the same repository' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l trace -d 'The trace (JSON Lines); `-` reads standard input' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l latency -d 'Execution time of one batch by size: "1:2000,2:2400,4:3100" (µs, interpolated linearly), "2000+150*b", or a file holding either. For an ensemble, repeatable: MODEL=SPEC for one composing model, a SPEC without MODEL= for every composing model not named' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l format -d 'Output format' -r -f -a "human\t'Summary tables (default)'
json\t'One JSON document: every request, every batch and a summary'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l timeline -d 'Also draw the run as an SVG picture in FILE: time to the right, one lane per instance and slot (sequence batching) or per instance, one box per execution, coloured by sequence (or shaded by batch size)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l timeline-window -d 'Draw only the executions that overlap this time range, in µs of the trace\'s clock; either end may be left out ("5000:")' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l timeline-max-batches -d 'Draw at most N executions, the first ones (of the window); the picture says when some were left out' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l sweep -d 'Run the trace once per value of a config field and print one summary row per setting. KEY is a field path in the model config (dynamic_batching.max_queue_delay_microseconds, max_batch_size, instance_group[0].count, sequence_batching.oldest.max_candidate_sequences, ...); values are comma-separated, in config syntax ("[4,8]" for a list; strings need no quotes). Repeatable: every combination is run (at most 1000)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l gpus -d 'GPU ids of the target server, comma-separated (default: none, a CPU-only server). Instances are those Triton creates on it: count per listed GPU, one per GPU for a GPU group without count' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -l timeline-queue -d 'Also draw each executed request\'s queue wait (arrival to start of its execution) as a thin bar under the execution'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand simulate" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and not __fish_seen_subcommand_from generate" -f -a "generate" -d 'Write a synthetic trace (JSON Lines, sorted by arrival); the same options and seed give the same bytes'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l rate -d 'Requests per second (with --sequences: sequence starts per second)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l distribution -d 'Inter-arrival times' -r -f -a "constant\t'Evenly spaced arrivals'
poisson\t'A Poisson process (exponential inter-arrival times)'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l duration -d 'Only arrivals in the first S seconds' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l requests -d 'At most N requests' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l sequences -d 'Group the requests into N sequences (START on the first step, END on the last)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l sequence-length -d 'Mean number of requests per sequence' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l sequence-length-variation -d 'Sequence lengths vary uniformly by up to this many percent' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l think-time-us -d 'Microseconds between the steps of a sequence' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l priority-levels -d 'Give each request a random priority 1..=K' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l seed -d 'Seed of the random generator' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -s o -l output -d 'Write to FILE instead of standard output' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l string-ids -d 'Sequence ids as strings ("s1") instead of integers'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand trace; and __fish_seen_subcommand_from generate" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -l format -d 'Output format: human (default) or json (one object; fields in the documentation of `tritonctl::commands::doctor`)' -r -f -a "human\t'Summary tables (default)'
json\t'One JSON document: every request, every batch and a summary'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand doctor" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -s i -l input -d 'Requests: perf_analyzer\'s input-data JSON, or JSON Lines of requests; `-` reads standard input' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l device -d 'Execution device: `cpu`, `cuda` or `cuda:N`; default cuda when a CUDA device and ONNX Runtime\'s CUDA execution provider are present' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l model-version -d 'Model version to run (default: the highest numeric version directory)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l gpus -d 'GPU ids of the server the model is meant for, comma-separated (default: none, a CPU-only server): the instances are those Triton creates there, and a GPU instance on GPU N runs on cuda:N when this machine has it (else on the CPU, with a note)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l format -d 'Output format' -r -f -a "human\t'Summary tables (default)'
json\t'One JSON document: every request, every batch and a summary'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l profile -d 'Measure the execution time per batch size and write a latency file that `simulate --latency` reads' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -l sequence -d 'Stateful mode: fill the sequence control inputs and keep state per sequence (each top-level array of perf_analyzer\'s input data is one sequence)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand run" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s m -l model -d 'Model name' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s x -l model-version -d 'Model version (default: the server\'s choice)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s u -l url -d 'Server address, HOST:PORT or http://HOST:PORT; repeat to spread the load over several servers (connections and open-loop sends go round-robin). Default: localhost:8000, with `-i grpc` localhost:8001' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s i -l protocol -d 'Protocol (any case: perf_analyzer\'s `-i gRPC` and `-i HTTP` too)' -r -f -a "http\t'HTTP/1.1 with keep-alive connections'
grpc\t'gRPC: unary `ModelInfer`, or `ModelStreamInfer` with `--streaming`'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l endpoint -d 'The API requests go to: `infer` (KServe v2; a decoupled model\'s responses stream over gRPC), `generate` (Triton\'s generate extension; `generate_stream` for a decoupled model), `openai-chat` or `openai-completions` (an OpenAI-compatible server, streamed)' -r -f -a "infer\t'KServe v2 inference (`/infer`, gRPC `ModelInfer`; a decoupled model over gRPC `ModelStreamInfer`, read until its final response)'
generate\t'Triton\'s generate extension: `/generate`, or `/generate_stream` (server-sent events) for a decoupled model'
openai-chat\t'An OpenAI-compatible server\'s `/v1/chat/completions`, streamed'
openai-completions\t'An OpenAI-compatible server\'s `/v1/completions`, streamed'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l prompt-words -d 'Generative endpoints: synthetic prompts of MEAN words (normally distributed with STDDEV, seeded by `--seed`; default 100:0)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-tokens -d 'Generative endpoints: the most tokens to generate per request, sent as `max_tokens`' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l export-requests -l profile-export-file -d 'Write one JSON line per measured request to FILE: its level, its scheduled and actual send times, the arrival of each response (in microseconds since the Unix epoch) and its error kind or null. `--profile-export-file` is another name for it (perf_analyzer\'s)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s H -l header -d 'Extra HTTP header `Name:Value` on every request (repeatable)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-grpc-root-certifications-file -d 'gRPC over TLS: PEM file of CA certificates to trust besides the system\'s' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-grpc-private-key-file -d 'gRPC over TLS: PEM file of the client\'s private key (with `--ssl-grpc-certificate-chain-file`, for servers that require a client certificate)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-grpc-certificate-chain-file -d 'gRPC over TLS: PEM file of the client\'s certificate chain' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-verify-peer -d '`https://` URLs: check the server\'s certificate chain (1, default), or accept any certificate (0, with a warning)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-verify-host -d '`https://` URLs: check that the certificate names the host of the URL (2, default; 1 is the same, as in libcurl), or not (0)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-ca-certificates-file -d '`https://` URLs: PEM file of CA certificates to trust besides the system\'s' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-client-certificate-file -d '`https://` URLs: the client certificate, for servers that require one (its key from `--ssl-https-private-key-file`, or from this file when that is not given and the file is PEM)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-client-certificate-type -d 'Encoding of `--ssl-https-client-certificate-file` (any case)' -r -f -a "PEM\t'Base64 between `-----BEGIN ...-----` lines'
DER\t'Binary ASN.1 (one certificate or key)'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-private-key-file -d '`https://` URLs: the private key of the client certificate' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-https-private-key-type -d 'Encoding of `--ssl-https-private-key-file` (any case)' -r -f -a "PEM\t'Base64 between `-----BEGIN ...-----` lines'
DER\t'Binary ASN.1 (one certificate or key)'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l concurrency-range -d 'Closed loop: keep N requests outstanding, for N from START to END by STEP (`START[:END[:STEP]]`). The default load is concurrency 1' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l request-rate-range -d 'Open loop: send at R requests per second, for R from START to END by STEP; latency counts from the scheduled send time' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l request-intervals -d 'Open loop with the gaps of FILE (perf_analyzer\'s format: one gap in microseconds per line, replayed cyclically)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l request-distribution -d 'Gaps between open-loop sends' -r -f -a "constant\t'Evenly spaced sends'
poisson\t'Exponential gaps (a Poisson arrival process), seeded by `--seed`'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l seed -d 'Seed of the Poisson schedule and of random input data' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l shard -d 'Scale-out: this worker\'s share of the load, shard I of N (0 <= I < N <= 10000): the full schedule\'s arrivals of index I mod N (a Poisson stream of rate R/N seeded from `--seed` and I), concurrency C/N (one more for the first C mod N shards), sequence ids and `--input-data` streams of its own. Start every worker with the same flags and `--start-at`, then `perf merge` their JSON' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l start-at -d 'Wait until TIME on this host\'s clock before the first level (after connecting and reading the model): RFC 3339 (2026-11-29T10:00:00Z, or with an offset) or Unix seconds (1795946400.5). A time already past warns and starts at once; more than 24 hours ahead is refused' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-concurrency -d 'Open loop: at most N requests in flight; a send that has to wait for a free slot is late' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s p -l measurement-interval -d 'Length of a measurement window in milliseconds. Without `--duration` or `--request-count` a level is measured in such windows until the last 3 are stable (or `--max-trials`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s s -l stability-percentage -d 'Stability windows: the last 3 windows\' throughputs and mean latencies (pP latencies with `--percentile`) may differ by this many percent (max/min <= 1 + P/100)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s r -l max-trials -d 'Stability windows: at most this many windows per level; a level that is not stable by then is reported with `stable: false`' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l measurement-mode -d 'How stability windows end (perf_analyzer\'s modes): `time_windows` after `--measurement-interval`, or `count_windows` when at least `--measurement-request-count` requests finished in the window and it lasted at least 1 s' -r -f -a "time_windows\t'Each window lasts `--measurement-interval` milliseconds'
count_windows\t'Each window has at least `--measurement-request-count` finished requests and lasts at least 1 s'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l measurement-request-count -d 'Count windows: finished requests per window (default 50; needs `--measurement-mode count_windows`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l percentile -d 'The latency percentile (1 to 100) stability windows compare instead of the mean; the table shows it as a `pP µs` column when it is not one of p50, p90, p95, p99' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-threads -d 'Accepted for perf_analyzer\'s command lines (its worker threads): tritonctl\'s asynchronous runtime needs no thread per request (a note says so)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s l -l latency-threshold -d 'The latency limit in milliseconds (perf_analyzer\'s `-l`): the sweep stops at the first level whose latency (pP with `--percentile`, else the mean) is not below it; exit 1 when no level is' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l metrics-url -d 'The metrics endpoint, `[http://]HOST[:PORT][/PATH]` (default: the first server\'s host, port 8002, path /metrics)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l metrics-interval -d 'How often the metrics are read during a level, in milliseconds (default 1000)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l duration -d 'Length of the measurement window in seconds (overrides `--measurement-interval`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l request-count -d 'Measure exactly N requests per level instead of a time window' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l warmup -d 'Seconds of load before each level\'s measurement starts (not counted)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l timeout -d 'Per-request timeout in milliseconds (a timed-out request is an error of kind `timeout`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-response-bytes -d 'The largest response body read, in bytes (a larger one is refused unread or cut off at the limit). Default: 16 MiB for the metadata, config and statistics endpoints, and for inference 4 times the outputs\' size at the batch size sent, at least 64 MiB' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-input-bytes -d 'The largest input tensor built, in bytes as sent (elements times element size; 32 bytes per element as JSON), checked before it is allocated (suffixes K, M, G as for --max-file-bytes)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l input-data -d 'Input values: `random` (seeded), `zero`, or a JSON file in perf_analyzer\'s format (`{"data": [{"INPUT": [..]}, ...]}`, values also as `{"content": [..], "shape": [..]}` or `{"b64": ".."}`; for sequence models `data` may be a list of streams, one per sequence); a directory with one file per input, named after it (raw bytes, or for BYTES inputs one string per line, as perf_analyzer); for the generative endpoints a file of prompts as JSON Lines (one `{"text": ".."}`, `{"prompt": ".."}` or JSON string per line)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l string-length -d 'Generated BYTES (string) inputs: random lowercase strings of N characters (default 128, as perf_analyzer)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l string-data -d 'Generated BYTES (string) inputs: this text in every element (wins over `--string-length`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l shared-memory -d 'Inputs and outputs in shared memory registered with the server (Triton\'s shared-memory extensions, as perf_analyzer\'s flag): `system` uses POSIX shared memory under /dev/shm, so the server must run on this host and share its /dev/shm (POSIX systems only); `cuda` uses GPU memory shared through CUDA IPC handles, so the server must run on this host and reach the GPU of `--shared-memory-device`' -r -f -a "none\t'In the requests and responses (default)'
system\t'POSIX shared memory (/dev/shm), registered with the server'
cuda\t'CUDA device memory shared through CUDA IPC handles'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l output-shared-memory-size -d 'With `--shared-memory`: bytes of shared memory per output and request in flight (perf_analyzer\'s default 102400)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l shared-memory-device -d 'With `--shared-memory cuda`: the GPU whose memory holds the tensors (its CUDA device number, as the server sees it; default 0)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l shape -d 'Shape of an input without the batch dimension, `NAME:D1,D2` (needed for variable dims; repeatable)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s b -l batch-size -d 'Batch size of every request' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l input-tensor-format -d 'Input tensor encoding over HTTP (default: binary when the server advertises the `binary_tensor_data` extension, else json)' -r -f -a "binary\t'The binary tensor data extension (`Inference-Header-Content-Length`)'
json\t'Tensors as JSON arrays'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l output-tensor-format -d 'Output tensor encoding requested over HTTP (default as for `--input-tensor-format`)' -r -f -a "binary\t'The binary tensor data extension (`Inference-Header-Content-Length`)'
json\t'Tensors as JSON arrays'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l max-error-rate -d 'Exit with status 1 when the share of failed requests in any level is above this (0 to 1)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l format -d 'Output format' -r -f -a "human\t'A table per load level (default)'
json\t'One JSON document (see schemas/perf.schema.json)'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s f -l csv -d 'Also write perf_analyzer\'s CSV columns to FILE (Model Analyzer reads it)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l plot -d 'Also write an SVG picture to FILE: throughput against the latency percentiles per level, and each level\'s latency distribution' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l sequence-length -d 'Sequence models (detected from the config): requests per sequence (default 20, or the length of the data streams of `--input-data`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l sequence-length-variation -d 'Sequence models: each sequence\'s length is drawn uniformly within ±P % of `--sequence-length` (at least 1; seeded by `--seed`)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l sequence-id-prefix -d 'Sequence models: send string sequence ids, PREFIX followed by the number (the model must use a string CORRID)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l sequence-id-range -d 'Sequence ids `START[:END]` (END exclusive; ids wrap around). The default starts at a random base so that two runs do not collide' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l num-of-sequences -d 'Open loop, sequence models: sequences live at once (each has at most one request in flight)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l progress -d 'Live progress on standard error: `auto` (a bar when it is a terminal), `always` (also on a file or pipe, as plain lines every 5 s and one per finished level), or `never`' -r -f -a "auto\t'When standard error is a terminal (and not --quiet)'
always\t'Always: a bar on a terminal, plain lines on a file or pipe'
never\t'Never'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l streaming -d 'gRPC only: send requests over bidirectional `ModelStreamInfer` streams (one per request in flight) instead of unary calls'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l ssl-grpc-use-ssl -d 'gRPC over TLS (an `https://` URL in `-u` does the same for that server). The server\'s certificate is checked against the system\'s CAs and `--ssl-grpc-root-certifications-file`'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s a -l async -d 'Accepted for perf_analyzer\'s command lines: tritonctl always sends asynchronously (a note says so)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l sync -d 'Accepted for perf_analyzer\'s command lines: tritonctl sends asynchronously all the same (a note says so); the load is the same closed or open loop'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l binary-search -d 'With `-l`: binary search between the range\'s START and END for the highest concurrency or request rate under the threshold, to within STEP (perf_analyzer\'s meaning)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l collect-metrics -d 'Read Triton\'s Prometheus metrics during each level and report GPU utilization, power and memory per GPU (table, JSON, CSV)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -l batched -d 'Model without the config endpoint (plain KServe v2 servers): the first metadata dim is a batch dim'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and not __fish_seen_subcommand_from merge" -f -a "merge" -d 'Combine the `perf --format json` results of workers that loaded one server together into one report: histograms added (percentiles of all samples), counters summed'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -l format -d 'Output format' -r -f -a "table\t'The table of `perf` (default)'
json\t'The JSON document of `perf --format json`, with `merged_from`'
csv\t'perf_analyzer\'s CSV columns, as `perf -f` writes them'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -s f -l csv -d 'Also write perf_analyzer\'s CSV columns to FILE' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand perf; and __fish_seen_subcommand_from merge" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l color -d 'When to use colour in human output (`auto`: on a terminal, unless NO_COLOR is set or CLICOLOR=0; CLICOLOR_FORCE=1 turns it on)' -r -f -a "auto\t'Colour when standard output is a terminal, unless NO_COLOR is set or CLICOLOR=0 (CLICOLOR_FORCE=1: colour anyway)'
always\t'Always colour, even when NO_COLOR is set'
never\t'Never colour'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l max-file-bytes -d 'The largest config, trace, input or settings file read, in bytes (suffixes K, M, G: powers of 1024); ONNX model files have no limit' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l latency -d 'Execution time of one batch by size: "1:2000,2:2400,4:3100" (µs, interpolated linearly), "2000+150*b", or a file holding either' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l profile -d 'The latency file `run --profile` wrote' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l rate -d 'Workload: Poisson arrivals at R requests per second (with --sequences: sequence starts per second), seeded by --seed' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l requests -d 'With --rate: this many requests (default 10000 without --duration)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l duration -d 'With --rate: only arrivals in the first S seconds' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l sequences -d 'With --rate: group the requests into N sequences, as `trace generate` does (default: as many as the requests allow for a sequence model, none otherwise)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l sequence-length -d 'With --rate: mean steps per sequence' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l sequence-length-variation -d 'With --rate: sequence lengths vary uniformly by up to this many percent' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l think-time-us -d 'With --rate: microseconds between the steps of a sequence' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l seed -d 'Seed of the arrivals of --rate' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l trace -d 'Workload: a trace (simulate\'s JSON Lines) or the lines `perf --export-requests` wrote (their scheduled times become arrivals)' -r -F
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l level -d 'With --trace of a `perf --export-requests` file: the lines of level I only (required when the file holds more than one level)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l slo-p99-ms -d 'Objective: the p99 latency at most MS milliseconds (the same as --slo-ms MS --slo-percentile 99)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l slo-ms -d 'Objective: the --slo-percentile latency at most MS milliseconds' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l slo-percentile -d 'The percentile --slo-ms applies to (above 0, at most 100)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l objective -d 'What to optimise' -r -f -a "instances\t'The fewest instances meeting the latency objective at the workload (default)'
throughput\t'The highest rate one instance sustains under the latency objective'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l max-instances -d 'Instance counts searched: 1 to N (per GPU for a GPU instance group)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l max-batch-size -d 'Largest max_batch_size searched (default: the config\'s); sizes are the powers of two below it and it' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l queue-delays -d 'The max_queue_delay_microseconds values searched' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l gpus -d 'GPU ids of the target server, comma-separated (default: none, a CPU-only server), as for simulate: a GPU group\'s count is per GPU' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -s u -l url -d 'A live Triton (HOST:PORT or http://HOST:PORT): without --latency and --profile, the latency curve is measured on it (batches of each size at concurrency 1, compute times from its statistics); with --verify, the recommendation is proven on it' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -s m -l model -d 'The model\'s name on the server (default: the config\'s name, else the directory\'s)' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l verify-duration -d '--verify: seconds measured per config' -r
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l format -d 'Output format' -r -f -a "human\t'Summary tables (default)'
json\t'One JSON document: every request, every batch and a summary'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -s q -l quiet -d 'Print only the findings: no summary, no progress'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -s v -l verbose -d 'Also report what was checked (on standard error)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l follow-symlinks -d 'Follow symbolic links that lead out of the directory being processed (a model repository or model directory); without it such files are reported and not read, nor written through'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l write -d 'Edit the config.pbtxt in place to the recommended config (comments and layout kept; written atomically)'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -l verify -d 'Load the recommended config into the server (repository extension: Triton started with --model-control-mode=explicit), measure it at the workload\'s rate (Poisson, --seed), then the cheapest rejected candidate; the server\'s config of the model is loaded back at the end'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand tune" -s V -l version -d 'Print version'
complete -c tritonctl -n "__fish_tritonctl_using_subcommand explain" -f -a "E0001\t'The text is not valid protobuf text format'
E0002\t'Messages or lists are nested deeper than 100 levels'
E0101\t'A field that the message type does not have'
E0102\t'A value of the wrong kind for its field (string, number, message, list)'
E0103\t'An enum value name that the enum does not define'
E0104\t'An integer outside the range of its field\'s type'
E0105\t'A non-repeated field is given more than once'
E0106\t'Two members of one oneof are set'
E0107\t'A scalar field without \':\' after its name'
E0108\t'An extension or Any field name in brackets'
E0109\t'A boolean written in a form protobuf does not accept'
E0201\t'Triton cannot tell which backend serves the model'
E0202\t'No backend could be derived and the platform is not one Triton knows'
E0203\t'An ensemble names a backend'
E0204\t'The platform does not belong to the named backend'
E0205\t'`max_batch_size` is negative'
E0206\t'A dynamic-batching preferred batch size is 0 or negative'
E0207\t'A dynamic-batching preferred batch size exceeds `max_batch_size`'
E0208\t'`default_priority_level` is not within `[1, priority_levels]`'
E0209\t'A `priority_queue_policy` key is not a valid priority level'
E0210\t'`preserve_ordering` with more than one priority level'
E0211\t'`preserve_ordering` with a queue policy that delays timed-out requests'
E0212\t'The response cache is enabled for a sequence-batched model'
E0213\t'A sequence-batching `control_input` has no name'
E0214\t'Two sequence-batching `control_input` entries use the same tensor'
E0215\t'A sequence control kind is given for more than one tensor'
E0216\t'A START/END/READY control gives no false/true values'
E0217\t'A START/END/READY control gives more than one kind of false/true values'
E0218\t'A false/true list does not have exactly two entries'
E0219\t'A CORRID control gives false/true values'
E0220\t'A CORRID control has a data type other than UINT64, INT64, UINT32, INT32 or STRING'
E0221\t'A preferred batch size of the oldest strategy is 0 or negative'
E0222\t'A preferred batch size of the oldest strategy exceeds `max_batch_size`'
E0223\t'`direct.minimum_slot_utilization` is outside 0.0..1.0'
E0224\t'An ensemble without `ensemble_scheduling`'
E0225\t'The response cache is enabled for a decoupled model'
E0226\t'A `model_metrics.metric_control` lacks `metric_identifier`'
E0227\t'A metric identifier has an empty `family`'
E0228\t'A `model_metrics.metric_control` lacks `histogram_options`'
E0229\t'`histogram_options` without buckets'
E0301\t'An input or output has no name'
E0302\t'An input or output has no `data_type`'
E0303\t'An input or output has no `dims`'
E0304\t'An empty `reshape` on a model that does not batch'
E0305\t'A dimension is 0 or below -1'
E0306\t'A `reshape` dimension is 0 or below -1'
E0307\t'The element count of a shape does not fit in 64 bits'
E0308\t'`dims` and `reshape` hold different numbers of elements'
E0309\t'`dims` and `reshape` split at their -1 entries into different numbers of parts'
E0310\t'An input with format NHWC/NCHW does not have 3 dims'
E0311\t'`is_shape_tensor` on a model that is not TensorRT'
E0312\t'`is_non_linear_format_io` on a model that is not TensorRT'
E0313\t'A non-linear-format tensor does not have 3 dims'
E0314\t'A `batch_input` does not name exactly one source input'
E0315\t'A `batch_input` kind Triton does not know'
E0316\t'A `batch_input` whose data type is not INT32 or FP32'
E0317\t'A `batch_input`/`batch_output` source is not a model input'
E0318\t'A `batch_output` does not name exactly one source input'
E0319\t'A `batch_output` kind Triton does not know'
E0320\t'A `batch_output` target is not a model output'
E0321\t'A `batch_output` lists the same target twice'
E0401\t'A KIND_MODEL instance group lists GPUs'
E0402\t'A KIND_GPU instance group on a server without usable GPUs'
E0403\t'An instance group lists a GPU the server does not have'
E0404\t'A KIND_CPU instance group lists GPUs'
E0405\t'An instance group kind given as a number Triton does not know'
E0406\t'An instance group names TensorRT optimization profiles on another platform'
E0407\t'An empty string in an instance group\'s `profile` list'
E0408\t'An instance group `profile` entry that is not a number'
E0409\t'A negative instance group `profile` entry'
E0501\t'TRITON_BATCH_STRATEGY_PATH is set on a model that uses the sequence batcher'
E0502\t'The custom batch strategy library lies outside the model directory'
E0503\t'The custom batch strategy library does not exist'
E0504\t'A sequence state lists more than one initial_state'
E0505\t'initial_state data_type differs from the state\'s data_type'
E0506\t'initial_state without a name'
E0507\t'Two states with the same input_name both carry an initial_state'
E0508\t'initial_state dims have a different rank than the state dims'
E0509\t'initial_state dims contain -1'
E0510\t'An initial_state dim differs from a fixed state dim'
E0511\t'initial_state data_file holds fewer bytes than the initial tensor needs'
E0512\t'initial_state data_file does not exist'
E0513\t'initial_state has neither zero_data nor data_file'
E0514\t'use_growable_memory without use_same_buffer_for_input_output'
E0515\t'use_growable_memory on a model with CPU instances'
E0601\t'`ensemble_scheduling` on a model whose platform is not `ensemble`'
E0602\t'An ensemble with `instance_group`'
E0603\t'An ensemble with `optimization`'
E0604\t'An ensemble with `model_warmup`'
E0605\t'An ensemble without any `step`'
E0606\t'A step without `model_name`, `input_map` or `output_map`'
E0607\t'Two output maps write the same ensemble tensor'
E0608\t'An ensemble input that no step reads'
E0609\t'An ensemble output that no step map mentions'
E0610\t'An ensemble output that cannot be computed from the ensemble inputs'
E0611\t'An intermediate ensemble tensor that is never produced or never consumed'
E0620\t'The ensemble\'s `max_batch_size` is larger than a composing model\'s'
E0621\t'An `input_map` key that is not an input of the step\'s model'
E0622\t'A required input of a composing model is not fed by the step'
E0623\t'An `output_map` key that is not an output of the step\'s model'
E0624\t'An ensemble tensor used with two different data types'
E0625\t'An ensemble tensor used with two incompatible shapes'
E0626\t'A step combines tensors that descend from different decoupled models'
E0630\t'A step names a model that is not in the repository'
E0631\t'Ensembles that contain each other'
E0632\t'A step asks for a model version that will not be loaded'
E0702\t'The config\'s `name` differs from the model directory\'s name'
E0703\t'No version directory is selected by the version policy'
E0704\t'`runtime` names a library path that leaves its directory'
E0705\t'No config.pbtxt while auto-complete is disabled'
E0706\t'A model\'s file is a symbolic link that leads out of the directory being validated'
E0801\t'The stateful backend needs the onnx_file_name parameter'
E0802\t'The ONNX file named by onnx_file_name is missing from a version directory'
E0803\t'The state_pairs parameter is malformed'
E0804\t'A state tensor (or the reset tensor) is listed as a config input or output'
E0805\t'No CONTROL_SEQUENCE_START control names the model\'s reset input'
E0806\t'No CONTROL_SEQUENCE_END control'
E0807\t'START/END controls of the stateful backend must use int32_false_true'
E0808\t'The stateful backend requires sequence_batching'
E0809\t'The stateful backend\'s state storage configuration is inconsistent'
E0810\t'Lazy buffer parameters are incomplete, negative or not integers'
E0811\t'A stateful-backend input or output does not have exactly one -1 dimension'
E0812\t'More than 5 inputs or outputs for the stateful backend'
E0813\t'A data type the stateful backend does not support'
E0814\t'The stateful backend needs max_batch_size ≥ 1'
E0815\t'The stateful backend needs at least one input and one output'
E0901\t'A warmup input has a variable-size (-1) dimension'
E0902\t'A warmup input has no data_type'
E0903\t'A warmup input has a negative dimension other than -1'
E0904\t'A warmup input has neither zero_data, random_data nor input_data_file'
E0905\t'A warmup input_data_file holds fewer bytes than the input needs'
E0906\t'A warmup input_data_file does not exist'
E0907\t'A warmup sample does not provide every required model input'
E0908\t'A warmup input\'s data_type differs from the model input\'s'
E0909\t'A warmup input\'s dims do not fit the model input\'s dims'
E0910\t'Warmup on a sequence model whose CORRID control is TYPE_STRING'
E0911\t'A TYPE_STRING warmup input_data_file does not hold the input\'s elements'
N0001\t'A KIND_CPU group without count gets 2 instances for ONNX Runtime and TensorFlow'
N0002\t'response_cache works only when the server has a cache configured'
N0701\t'A model directory without config.pbtxt'
N0702\t'An ensemble step uses a model that fails to load'
N0703\t'A config checked on its own names neither platform nor backend'
W0001\t'A preferred batch size that the scheduler can never form'
W0002\t'preferred_batch_size lists a size twice or out of order'
W0003\t'max_queue_delay_microseconds on a model without batching has no effect'
W0004\t'dynamic_batching on a model with max_batch_size 0 forms no batches'
W0005\t'max_sequence_idle_microseconds is shorter than 100 ms'
W0006\t'instance_group count 0 or negative is silently replaced'
W0007\t'An instance group lists the same GPU more than once'
W0008\t'preserve_ordering on a decoupled model holds back streamed responses'
W0009\t'platform has no effect (or a non-canonical value) for this backend'
W0010\t'default_model_filename is missing from every version directory'
W0012\t'Two sequence states share an input_name or an output_name'
W0013\t'A queue policy\'s timeout_action or allow_timeout_override has no timeout to act on'
W0014\t'Priority settings without priority_levels are ignored'
W0080\t'A parameter the stateful backend does not read'
W0081\t'The stateful backend supports only the Oldest sequence strategy'
W0082\t'A stateful-backend parameter value the backend does not understand'
W0083\t'buffer_dealloc_threshold is not above buffer_alloc_threshold'
W0701\t'A version directory whose name starts with 0'
W0702\t'A sub-directory of the model that is not a version number'
W0703\t'`version_policy.specific` lists a version without a directory'
W0704\t'A backend that is not one of Triton\'s standard backends'
W0705\t'The `runtime` library is not in the model directory and not a known backend\'s library'
W0706\t'A hidden directory in the model repository'
W0901\t'model_metrics names a metric family Triton core does not let you customise'
W0902\t'Histogram bucket boundaries are not strictly increasing'
W0903\t'A warmup input is neither a model input nor a sequence control input'
W0904\t'A warmup sample\'s batch_size exceeds what the backend accepts'
W0905\t'A warmup sample with batch_size 0 is skipped'
W1001\t'A suppression comment names a rule that does not exist'
W1002\t'A suppression comment silences nothing'
W1101\t'A Python model\'s BLS call names a model that is not in the repository'
W1102\t'A BLS call to a stateful model without a correlation ID or sequence flags'
W1103\t'A Python model\'s BLS call targets the model itself'"
complete -c tritonctl -n "__fish_tritonctl_using_subcommand completions" -f -a "bash\t''
elvish\t''
fish\t''
powershell\t''
zsh\t''"

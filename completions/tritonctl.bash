_tritonctl() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="tritonctl"
                ;;
            tritonctl,autoconfig)
                cmd="tritonctl__subcmd__autoconfig"
                ;;
            tritonctl,completions)
                cmd="tritonctl__subcmd__completions"
                ;;
            tritonctl,convert)
                cmd="tritonctl__subcmd__convert"
                ;;
            tritonctl,doctor)
                cmd="tritonctl__subcmd__doctor"
                ;;
            tritonctl,explain)
                cmd="tritonctl__subcmd__explain"
                ;;
            tritonctl,fmt)
                cmd="tritonctl__subcmd__fmt"
                ;;
            tritonctl,perf)
                cmd="tritonctl__subcmd__perf"
                ;;
            tritonctl,run)
                cmd="tritonctl__subcmd__run"
                ;;
            tritonctl,simulate)
                cmd="tritonctl__subcmd__simulate"
                ;;
            tritonctl,trace)
                cmd="tritonctl__subcmd__trace"
                ;;
            tritonctl,tune)
                cmd="tritonctl__subcmd__tune"
                ;;
            tritonctl,validate)
                cmd="tritonctl__subcmd__validate"
                ;;
            tritonctl__subcmd__perf,merge)
                cmd="tritonctl__subcmd__perf__subcmd__merge"
                ;;
            tritonctl__subcmd__trace,generate)
                cmd="tritonctl__subcmd__trace__subcmd__generate"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        tritonctl)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --help --version validate explain completions fmt convert autoconfig simulate trace doctor run perf tune"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__autoconfig)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --default-max-batch-size --max-batch-size --merge --format --write --force --gpus --full --minimal --triton-compatible --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-batch-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --default-max-batch-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --merge)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "pbtxt json" -- "${cur}"))
                    return 0
                    ;;
                --gpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__completions)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --help --version bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__convert)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --to --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --to)
                    COMPREPLY=($(compgen -W "json pbtxt" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__doctor)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --format --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__explain)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --all --help --version E0001 E0002 E0101 E0102 E0103 E0104 E0105 E0106 E0107 E0108 E0109 E0201 E0202 E0203 E0204 E0205 E0206 E0207 E0208 E0209 E0210 E0211 E0212 E0213 E0214 E0215 E0216 E0217 E0218 E0219 E0220 E0221 E0222 E0223 E0224 E0225 E0226 E0227 E0228 E0229 E0301 E0302 E0303 E0304 E0305 E0306 E0307 E0308 E0309 E0310 E0311 E0312 E0313 E0314 E0315 E0316 E0317 E0318 E0319 E0320 E0321 E0401 E0402 E0403 E0404 E0405 E0406 E0407 E0408 E0409 E0501 E0502 E0503 E0504 E0505 E0506 E0507 E0508 E0509 E0510 E0511 E0512 E0513 E0514 E0515 E0601 E0602 E0603 E0604 E0605 E0606 E0607 E0608 E0609 E0610 E0611 E0620 E0621 E0622 E0623 E0624 E0625 E0626 E0630 E0631 E0632 E0702 E0703 E0704 E0705 E0706 E0801 E0802 E0803 E0804 E0805 E0806 E0807 E0808 E0809 E0810 E0811 E0812 E0813 E0814 E0815 E0901 E0902 E0903 E0904 E0905 E0906 E0907 E0908 E0909 E0910 E0911 N0001 N0002 N0701 N0702 N0703 W0001 W0002 W0003 W0004 W0005 W0006 W0007 W0008 W0009 W0010 W0012 W0013 W0014 W0080 W0081 W0082 W0083 W0701 W0702 W0703 W0704 W0705 W0706 W0901 W0902 W0903 W0904 W0905 W1001 W1002 W1101 W1102 W1103"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__fmt)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --check --diff --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__perf)
            opts="-q -v -m -x -u -i -H -p -s -r -a -l -b -f -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --model --model-version --url --protocol --streaming --endpoint --prompt-words --max-tokens --profile-export-file --export-requests --header --ssl-grpc-use-ssl --ssl-grpc-root-certifications-file --ssl-grpc-private-key-file --ssl-grpc-certificate-chain-file --ssl-https-verify-peer --ssl-https-verify-host --ssl-https-ca-certificates-file --ssl-https-client-certificate-file --ssl-https-client-certificate-type --ssl-https-private-key-file --ssl-https-private-key-type --concurrency-range --request-rate-range --request-intervals --request-distribution --seed --shard --start-at --max-concurrency --measurement-interval --stability-percentage --max-trials --measurement-mode --measurement-request-count --percentile --async --sync --max-threads --latency-threshold --binary-search --collect-metrics --metrics-url --metrics-interval --duration --request-count --warmup --timeout --max-response-bytes --max-input-bytes --input-data --string-length --string-data --shared-memory --output-shared-memory-size --shared-memory-device --shape --batch-size --input-tensor-format --output-tensor-format --max-error-rate --format --csv --plot --batched --sequence-length --sequence-length-variation --sequence-id-prefix --sequence-id-range --num-of-sequences --progress --help --version merge"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -x)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --protocol)
                    COMPREPLY=($(compgen -W "http grpc" -- "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -W "http grpc" -- "${cur}"))
                    return 0
                    ;;
                --endpoint)
                    COMPREPLY=($(compgen -W "infer generate openai-chat openai-completions" -- "${cur}"))
                    return 0
                    ;;
                --prompt-words)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --export-requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile-export-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -H)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-grpc-root-certifications-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-grpc-private-key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-grpc-certificate-chain-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-https-verify-peer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-https-verify-host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-https-ca-certificates-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-https-client-certificate-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-https-client-certificate-type)
                    COMPREPLY=($(compgen -W "PEM DER" -- "${cur}"))
                    return 0
                    ;;
                --ssl-https-private-key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --ssl-https-private-key-type)
                    COMPREPLY=($(compgen -W "PEM DER" -- "${cur}"))
                    return 0
                    ;;
                --concurrency-range)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-rate-range)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-intervals)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-distribution)
                    COMPREPLY=($(compgen -W "constant poisson" -- "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shard)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --start-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-concurrency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --measurement-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -p)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stability-percentage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -s)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-trials)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -r)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --measurement-mode)
                    COMPREPLY=($(compgen -W "time_windows count_windows" -- "${cur}"))
                    return 0
                    ;;
                --measurement-request-count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --percentile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --latency-threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -l)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --request-count)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --warmup)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-response-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-input-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --input-data)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --string-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --string-data)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shared-memory)
                    COMPREPLY=($(compgen -W "none system cuda" -- "${cur}"))
                    return 0
                    ;;
                --output-shared-memory-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shared-memory-device)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --shape)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --batch-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --input-tensor-format)
                    COMPREPLY=($(compgen -W "binary json" -- "${cur}"))
                    return 0
                    ;;
                --output-tensor-format)
                    COMPREPLY=($(compgen -W "binary json" -- "${cur}"))
                    return 0
                    ;;
                --max-error-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json" -- "${cur}"))
                    return 0
                    ;;
                --csv)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --plot)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-length-variation)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-id-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-id-range)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --num-of-sequences)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --progress)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__perf__subcmd__merge)
            opts="-f -q -v -h -V --format --csv --color --quiet --verbose --max-file-bytes --follow-symlinks --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --format)
                    COMPREPLY=($(compgen -W "table json csv" -- "${cur}"))
                    return 0
                    ;;
                --csv)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__run)
            opts="-q -v -i -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --input --sequence --device --model-version --gpus --format --profile --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --input)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -i)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --device)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model-version)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json" -- "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__simulate)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --config --trace --latency --format --timeline --timeline-window --timeline-max-batches --timeline-queue --sweep --gpus --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --latency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json" -- "${cur}"))
                    return 0
                    ;;
                --timeline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeline-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeline-max-batches)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sweep)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__trace)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --help --version generate"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__trace__subcmd__generate)
            opts="-o -q -v -h -V --rate --distribution --duration --requests --sequences --sequence-length --sequence-length-variation --think-time-us --priority-levels --string-ids --seed --output --color --quiet --verbose --max-file-bytes --follow-symlinks --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --distribution)
                    COMPREPLY=($(compgen -W "constant poisson" -- "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequences)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-length-variation)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --think-time-us)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --priority-levels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__tune)
            opts="-q -v -u -m -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --latency --profile --rate --requests --duration --sequences --sequence-length --sequence-length-variation --think-time-us --seed --trace --level --slo-p99-ms --slo-ms --slo-percentile --objective --max-instances --max-batch-size --queue-delays --gpus --write --url --model --verify --verify-duration --format --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --latency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --profile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --requests)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequences)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-length)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sequence-length-variation)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --think-time-us)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --level)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slo-p99-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slo-ms)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --slo-percentile)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --objective)
                    COMPREPLY=($(compgen -W "instances throughput" -- "${cur}"))
                    return 0
                    ;;
                --max-instances)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-batch-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --queue-delays)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        tritonctl__subcmd__validate)
            opts="-q -v -h -V --color --quiet --verbose --max-file-bytes --follow-symlinks --format --strict --allow --deny --platform-default --known-backend --gpus --min-compute-capability --disable-auto-complete-config --exit-zero --config --no-config --print-config --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --max-file-bytes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "human json github sarif junit" -- "${cur}"))
                    return 0
                    ;;
                --allow)
                    COMPREPLY=($(compgen -W "E0001 E0002 E0101 E0102 E0103 E0104 E0105 E0106 E0107 E0108 E0109 E0201 E0202 E0203 E0204 E0205 E0206 E0207 E0208 E0209 E0210 E0211 E0212 E0213 E0214 E0215 E0216 E0217 E0218 E0219 E0220 E0221 E0222 E0223 E0224 E0225 E0226 E0227 E0228 E0229 E0301 E0302 E0303 E0304 E0305 E0306 E0307 E0308 E0309 E0310 E0311 E0312 E0313 E0314 E0315 E0316 E0317 E0318 E0319 E0320 E0321 E0401 E0402 E0403 E0404 E0405 E0406 E0407 E0408 E0409 E0501 E0502 E0503 E0504 E0505 E0506 E0507 E0508 E0509 E0510 E0511 E0512 E0513 E0514 E0515 E0601 E0602 E0603 E0604 E0605 E0606 E0607 E0608 E0609 E0610 E0611 E0620 E0621 E0622 E0623 E0624 E0625 E0626 E0630 E0631 E0632 E0702 E0703 E0704 E0705 E0706 E0801 E0802 E0803 E0804 E0805 E0806 E0807 E0808 E0809 E0810 E0811 E0812 E0813 E0814 E0815 E0901 E0902 E0903 E0904 E0905 E0906 E0907 E0908 E0909 E0910 E0911 N0001 N0002 N0701 N0702 N0703 W0001 W0002 W0003 W0004 W0005 W0006 W0007 W0008 W0009 W0010 W0012 W0013 W0014 W0080 W0081 W0082 W0083 W0701 W0702 W0703 W0704 W0705 W0706 W0901 W0902 W0903 W0904 W0905 W1001 W1002 W1101 W1102 W1103" -- "${cur}"))
                    return 0
                    ;;
                --deny)
                    COMPREPLY=($(compgen -W "E0001 E0002 E0101 E0102 E0103 E0104 E0105 E0106 E0107 E0108 E0109 E0201 E0202 E0203 E0204 E0205 E0206 E0207 E0208 E0209 E0210 E0211 E0212 E0213 E0214 E0215 E0216 E0217 E0218 E0219 E0220 E0221 E0222 E0223 E0224 E0225 E0226 E0227 E0228 E0229 E0301 E0302 E0303 E0304 E0305 E0306 E0307 E0308 E0309 E0310 E0311 E0312 E0313 E0314 E0315 E0316 E0317 E0318 E0319 E0320 E0321 E0401 E0402 E0403 E0404 E0405 E0406 E0407 E0408 E0409 E0501 E0502 E0503 E0504 E0505 E0506 E0507 E0508 E0509 E0510 E0511 E0512 E0513 E0514 E0515 E0601 E0602 E0603 E0604 E0605 E0606 E0607 E0608 E0609 E0610 E0611 E0620 E0621 E0622 E0623 E0624 E0625 E0626 E0630 E0631 E0632 E0702 E0703 E0704 E0705 E0706 E0801 E0802 E0803 E0804 E0805 E0806 E0807 E0808 E0809 E0810 E0811 E0812 E0813 E0814 E0815 E0901 E0902 E0903 E0904 E0905 E0906 E0907 E0908 E0909 E0910 E0911 N0001 N0002 N0701 N0702 N0703 W0001 W0002 W0003 W0004 W0005 W0006 W0007 W0008 W0009 W0010 W0012 W0013 W0014 W0080 W0081 W0082 W0083 W0701 W0702 W0703 W0704 W0705 W0706 W0901 W0902 W0903 W0904 W0905 W1001 W1002 W1101 W1102 W1103" -- "${cur}"))
                    return 0
                    ;;
                --platform-default)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --known-backend)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gpus)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --min-compute-capability)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _tritonctl -o nosort -o bashdefault -o default tritonctl
else
    complete -F _tritonctl -o bashdefault -o default tritonctl
fi

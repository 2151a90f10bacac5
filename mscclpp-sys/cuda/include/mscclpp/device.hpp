// Everything a user kernel needs: include this one header.
#pragma once
#include "mscclpp/core_device.hpp"
#include "mscclpp/atomic_device.hpp"
#include "mscclpp/copy_device.hpp"
#include "mscclpp/packet_device.hpp"
#include "mscclpp/semaphore_device.hpp"
#include "mscclpp/fifo_device.hpp"
#include "mscclpp/memory_channel_device.hpp"
#include "mscclpp/port_channel_device.hpp"
#include "mscclpp/switch_channel_device.hpp"
#include "mscclpp/concurrency_device.hpp"
#include "mscclpp/reduce_device.hpp"
